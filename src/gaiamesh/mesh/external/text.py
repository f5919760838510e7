"""Packets as text and text as packets, for an agent written by someone else: pure functions.

An external agent speaks its protocol's plain semantics, text in and text out. The relay turns
the packet it would send to that agent into a readable text (:func:`render`: the question and
the stage's input, from the payload models) and the text the agent answers into the packet its
stage emits (:func:`reply`). It may stand in for the stages whose output is text with a clear
meaning (:data:`STANDS_IN`): the pipeline's last stage (``triples`` in, the final answer out)
and a worker (a ``subtask`` in, its ``result`` out).
"""

from __future__ import annotations

import json
from typing import Any

from ..frames import (
    FINAL_ANSWER_TAG,
    DataEventPacket,
    ErrorPacket,
    Packet,
    PacketType,
    ResultPacket,
    SubTaskPacket,
    TriplesPacket,
    make_packet,
)
from ..payloads import DocInit, ErrorDetails, FinalAnswer, SubTaskResult, ToolFailure

# What an external agent may work on, and the packet its text answer becomes.
STANDS_IN: dict[PacketType, PacketType] = {
    PacketType.TRIPLES: PacketType.DATA_EVENT,
    PacketType.SUBTASK: PacketType.RESULT,
}
EXTERNAL_ERROR = "ExternalAgentError"  # error_details.type of a sub-task an external agent failed


def render(packet: Packet, doc: DocInit | None = None) -> str:
    """The text an external agent is given for ``packet`` (one of :data:`STANDS_IN`); ``doc``: the
    run's document, for a worker (it reads ``doc_init`` like the team's own workers)."""
    if isinstance(packet, TriplesPacket):
        return _render_triples(packet)
    if isinstance(packet, SubTaskPacket):
        return _render_subtask(packet, doc)
    raise ValueError(f"an external agent does not work on {packet.type.value!r} packets")


def _render_triples(packet: TriplesPacket) -> str:
    body = packet.payload
    lines = [f"Question: {body.resolved_question or packet.question}"]
    if body.resolved_question and body.resolved_question != packet.question:
        lines.append(f"(asked as: {packet.question})")
    if body.hops:
        lines += ["", "Already answered:"] + [f"- {h.question} -> {h.answer} ({h.fact})" for h in body.hops]
    if body.facts:
        lines += ["", "Facts from the document:"] + [f"- {f.text}" for f in body.facts]
    if body.triples:
        lines += ["", "As triples (subject | relation | object):"]
        lines += [f"- {t.subject} | {t.relation} | {t.object}" for t in body.triples]
    lines += ["", "Answer the question in a few words."]
    return "\n".join(lines)


def _render_subtask(packet: SubTaskPacket, doc: DocInit | None) -> str:
    task = packet.payload
    lines = [f"Task: {task.tool_name}"]
    lines += [f"{key}: {_value(value)}" for key, value in task.sub_task_input.items()]
    if task.context_summary:
        lines += ["", f"What is known so far: {task.context_summary}"]
    if packet.question:
        lines += ["", f"(The overall question: {packet.question})"]
    if doc is not None and doc.chunks:
        lines += ["", "Document:", "".join(doc.chunks)]
    return "\n".join(lines)


def _value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def reply(packet: Packet, text: str, src: str, seq: int, via: str) -> Packet:
    """The packet the stage emits, made of the external agent's answer ``text`` to ``packet``
    (``src``: the agent's node id; ``via``: its protocol, recorded as the answer's method). An
    empty answer is the stage failing: an ``error`` packet for the pipeline's stage (the run
    ends ``agent_error``), a ``FAILED`` result for a worker (the plan decides)."""
    answer = text.strip()
    if not answer:
        return failure(packet, f"the external agent ({via}) answered no text", src, seq)
    envelope: dict[str, Any] = {"run_id": packet.run_id, "src": src, "seq": seq, "question": packet.question,
                                "token_used": None}  # fmt: skip
    if isinstance(packet, TriplesPacket):
        body = FinalAnswer(
            answer=answer, method=f"external:{via}", question=packet.payload.resolved_question or packet.question,
            reading="", candidates=[answer], facts_used=len(packet.payload.facts),
            triples_seen=len(packet.payload.triples),
        )  # fmt: skip
        made = make_packet(PacketType.DATA_EVENT, body, tag=FINAL_ANSWER_TAG, **envelope)
        assert isinstance(made, DataEventPacket)
        return made
    if isinstance(packet, SubTaskPacket):
        task = packet.payload
        result = SubTaskResult(
            sub_task_id=task.sub_task_id, parent_task_id=task.parent_task_id,
            worker_agent_role=task.assigned_agent_role, status="COMPLETED", result_data=answer,
            processed_result_data=answer, evidence=answer,
        )  # fmt: skip
        made = make_packet(PacketType.RESULT, result, **envelope)
        assert isinstance(made, ResultPacket)
        return made
    raise ValueError(f"an external agent does not work on {packet.type.value!r} packets")


def failure(packet: Packet, why: str, src: str, seq: int) -> Packet:
    """What the stage emits when its external agent could not answer ``packet``: a worker's
    ``FAILED`` result, or the pipeline stage's ``error`` packet."""
    envelope: dict[str, Any] = {"run_id": packet.run_id, "src": src, "seq": seq, "question": packet.question,
                                "token_used": None}  # fmt: skip
    if isinstance(packet, SubTaskPacket):
        task = packet.payload
        result = SubTaskResult(
            sub_task_id=task.sub_task_id, parent_task_id=task.parent_task_id,
            worker_agent_role=task.assigned_agent_role, status="FAILED",
            error_details=ErrorDetails(message=why, type=EXTERNAL_ERROR),
        )  # fmt: skip
        return make_packet(PacketType.RESULT, result, **envelope)
    made = make_packet(
        PacketType.ERROR, ToolFailure(tool="external", error=why, on=packet.type.value), **envelope
    )
    assert isinstance(made, ErrorPacket)
    return made
