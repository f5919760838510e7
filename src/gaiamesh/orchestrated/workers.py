"""The worker tools of the orchestrated strategy: one agent per role, a sub-task in, a result out.

- ``research``: facts from the run's own document (it reads ``doc_init`` like every agent):
  ``find_fact`` (the sentence that best matches a query, and in it the span of the asked-for
  kind), ``answer_question`` (the pipeline's four stages, run inside this one worker).
- ``utility``: ``calculator`` (see :mod:`.calculator`).

A worker never answers with an ``error`` packet: a sub-task it cannot do comes back ``FAILED``
with the reason, and the orchestrator's plan decides what happens next.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ValidationError

from ..frames import (
    DocInit,
    DocInitPacket,
    ErrorDetails,
    EventsPacket,
    PacketType,
    SearchDocsPacket,
    SubTaskPacket,
    SubTaskResult,
    TriplesPacket,
)
from ..llm import LLMError
from ..tools import ToolContext, register
from ..tools import extract as extract_stage
from ..tools import reason as reason_stage
from ..tools import search as search_stage
from ..tools import triple as triple_stage
from ..tools.answer_type import AnswerType, spans, typed_rank
from ..tools.registry import Tool
from ..tools.text import sentences, terms
from .calculator import CalculatorError, calculate, format_number, to_number
from .catalog import RESEARCH, TOOLS, UTILITY, AnswerQuestion, Calculate, FindFact

Handler = Callable[[ToolContext, Any], Awaitable[tuple[Any, Any, str | None]]]


def _document(ctx: ToolContext) -> DocInit:
    if ctx.doc is None or not ctx.doc.chunks:
        raise LookupError("this worker has not received the run's document (doc_init)")
    return ctx.doc


def best_span(sentence: str, found: list[str], query: str) -> str:
    """Of the spans ``found`` in ``sentence``, the one closest to all of the query's words: the
    sum over the query's terms of each one's distance (in words) to the span."""
    words = sentence.split()
    stems = [set(terms(w)) for w in words]
    positions = {t: [i for i, s in enumerate(stems) if t in s] for t in set(terms(query))}
    positions = {t: at for t, at in positions.items() if at}

    def distance(span: str) -> int:
        first = span.split()[0]
        starts = [i for i, w in enumerate(words) if first in w] or [len(words)]
        return min(sum(min(abs(i - p) for p in at) for at in positions.values()) for i in starts)

    return min(found, key=distance)


async def find_fact(ctx: ToolContext, task: FindFact) -> tuple[Any, Any, str | None]:
    """``(span, its value, the sentence it came from)``."""
    doc = "".join(_document(ctx).chunks)
    sents = sentences(doc)
    atype = AnswerType(task.answer_type)
    for index, _score in typed_rank(task.query, sents, atype)[:5]:
        sentence = sents[index]
        if atype is AnswerType.ANY:
            return sentence, None, sentence
        found = spans(sentence, atype, task.query)
        if found:
            span = best_span(sentence, found, task.query)
            value = to_number(span) if atype in (AnswerType.YEAR, AnswerType.NUMBER) else None
            return span, value, sentence
    raise LookupError(f"no {atype.value} for {task.query!r} in the document")


async def answer_question(ctx: ToolContext, task: AnswerQuestion) -> tuple[Any, Any, str | None]:
    """The pipeline's answer to ``task.question``: search, extract, triple and reason in turn."""
    doc = _document(ctx)
    # The stages' packets, built here and never sent: the four stages run inside this worker.
    envelope: dict[str, Any] = {"run_id": "local", "src": "research", "seq": 0, "question": task.question}
    ctx.question = task.question
    passages = await search_stage.run(ctx, DocInitPacket(payload=doc, **envelope))
    events = await extract_stage.run(ctx, SearchDocsPacket(payload=passages, **envelope))
    triples = await triple_stage.run(ctx, EventsPacket(payload=events, **envelope))
    final = await reason_stage.run(ctx, TriplesPacket(payload=triples, **envelope))
    value = to_number(final.answer)
    return final.answer, value, " ".join(f.text for f in triples.facts[:2]) or None


async def calculator(ctx: ToolContext, task: Calculate) -> tuple[Any, Any, str | None]:
    value = calculate(task.expression)
    return format_number(value), value, task.expression


HANDLERS: dict[str, dict[str, tuple[type[BaseModel], Handler]]] = {
    RESEARCH: {"find_fact": (FindFact, find_fact), "answer_question": (AnswerQuestion, answer_question)},
    UTILITY: {"calculator": (Calculate, calculator)},
}
# Every worker tool of the catalog has a handler, and no handler is missing from the catalog.
assert {(r, t) for r, tools in HANDLERS.items() for t in tools} == {k for k in TOOLS if k[0] in HANDLERS}


def worker(role: str) -> Callable[[ToolContext, SubTaskPacket], Awaitable[SubTaskResult]]:
    """The tool function of a worker of ``role``: validate the input, run the named tool, and
    answer ``COMPLETED`` or ``FAILED`` with the reason."""
    tools = HANDLERS[role]

    async def run(ctx: ToolContext, packet: SubTaskPacket) -> SubTaskResult:
        task = packet.payload
        reply: dict[str, Any] = {"sub_task_id": task.sub_task_id, "parent_task_id": task.parent_task_id, "worker_agent_role": role}
        if task.assigned_agent_role != role:
            return _failed(reply, f"this worker's role is {role!r}, not {task.assigned_agent_role!r}", "WrongRole")
        if task.tool_name not in tools:
            return _failed(reply, f"role {role!r} has no tool {task.tool_name!r} (has: {', '.join(tools)})", "UnknownTool")
        model, handler = tools[task.tool_name]
        try:
            data, value, evidence = await handler(ctx, model.model_validate(task.sub_task_input))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "input"
            return _failed(reply, f"{task.tool_name}: input {where}: {first['msg']}", "BadInput")
        except CalculatorError as exc:
            return _failed(reply, f"{task.tool_name}: {exc}", "CalculatorError")
        except (LookupError, ValueError) as exc:
            return _failed(reply, f"{task.tool_name}: {exc}", "NotFound")
        except LLMError as exc:
            return _failed(reply, f"{task.tool_name}: {exc}", "ModelUnavailable")
        ctx.memory.setdefault("results", []).append({"step": task.sub_task_id, "result": data})
        return SubTaskResult(
            **reply, status="COMPLETED", result_data=data, processed_result_data=value, evidence=evidence
        )

    return run


def _failed(reply: dict[str, Any], message: str, kind: str) -> SubTaskResult:
    return SubTaskResult(**reply, status="FAILED", error_details=ErrorDetails(message=message, type=kind))


for _role in HANDLERS:
    register(
        Tool(
            _role, PacketType.SUBTASK, PacketType.RESULT, worker(_role),
            description=f"{_role} worker of the orchestrated strategy",
            reads=frozenset({PacketType.DOC_INIT}) if _role == RESEARCH else frozenset(),
        )
    )  # fmt: skip
