"""A stream's team by plain calls: the relay core honours the worker the coordinator chose (and
hands the item on when that worker is lost), and the coordinator's run drives the dispatcher
through a real RelayCore, so every item's fate and every frame are told once."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from gaiamesh.agents.catalog import readings, subscriptions
from gaiamesh.errors import TaskError
from gaiamesh.mesh.core import RelayCore
from gaiamesh.mesh.frames import (
    PacketType,
    ResultPacket,
    SubTaskPacket,
    doc_init,
    make_packet,
    parse_packet_json,
)
from gaiamesh.mesh.payloads import SubTask, SubTaskResult
from gaiamesh.mesh.protocols import get_adapter
from gaiamesh.mesh.routing import RoutingMode
from gaiamesh.models.llm import LLMClient
from gaiamesh.settings import Settings
from gaiamesh.stream.items import StreamItem
from gaiamesh.stream.plan import StreamPlan
from gaiamesh.stream.records import FateLine
from gaiamesh.stream.team import ANSWERER, COORDINATOR, ITEMS_FILE, coordinate, read_stream
from gaiamesh.tools.tool import ToolContext

TEAM = [("c", COORDINATOR), ("w1", ANSWERER), ("w2", ANSWERER), ("w3", ANSWERER)]


def core() -> RelayCore:
    c = RelayCore("run1", get_adapter("json"), TEAM, RoutingMode.SHARE)
    subs, reads = subscriptions(), readings()
    for node, tool in TEAM:
        c.register(node, subs[tool], reads[tool])
    return c


def subtask(c: RelayCore, sid: str, worker: str | None) -> bytes:
    task = SubTask(sub_task_id=sid, parent_task_id="run1", assigned_agent_role=ANSWERER, tool_name="answer",
                   sub_task_input={"id": sid, "q": "why?"}, assigned_agent_id=worker)  # fmt: skip
    return c.adapter.encode(make_packet(PacketType.SUBTASK, task, run_id="run1", src="c", seq=1).to_dict())


def test_the_relay_sends_a_subtask_to_the_worker_its_sender_chose() -> None:
    c = core()
    c.start("doc", "q?", 400, 0.0)
    assert [c.receive("c", subtask(c, f"s{i}", "w3"), 1.0).sends[0].dst for i in range(3)] == [("w3",)] * 3


def test_a_chosen_worker_that_is_lost_has_its_item_handed_to_another() -> None:
    c = core()
    c.start("doc", "q?", 400, 0.0)
    c.receive("c", subtask(c, "s1", "w2"), 1.0)
    moved = c.lost("w2", "killed", 2.0)
    (to,) = moved.sends[0].dst
    assert to in ("w1", "w3") and parse_packet_json(moved.sends[0].blob).payload.sub_task_id == "s1"  # type: ignore[union-attr]
    # and a new item naming the lost worker goes to a live one, not nowhere
    assert c.receive("c", subtask(c, "s2", "w2"), 3.0).sends[0].dst[0] in ("w1", "w3")


def test_no_named_worker_leaves_the_choice_to_the_relay() -> None:
    c = core()
    c.start("doc", "q?", 400, 0.0)
    assert {c.receive("c", subtask(c, f"s{i}", None), 1.0).sends[0].dst[0] for i in range(3)} == {"w1", "w2", "w3"}


class Wire:
    """The coordinator's ``ask`` through a real RelayCore: each sub-task the core routes is
    answered by the worker it reached (``answer`` decides what that worker says)."""

    def __init__(self, c: RelayCore, answer: Any) -> None:
        self.c, self.answer, self.t = c, answer, 1.0
        self.frames: list[str] = []

    async def ask(self, task: SubTask) -> SubTaskResult:
        self.t += 0.01
        packet = make_packet(PacketType.SUBTASK, task, run_id="run1", src="c", seq=1)
        out = self.c.receive("c", self.c.adapter.encode(packet.to_dict()), self.t)
        self.frames += [r.type or "" for r in out.records]
        if not out.sends:
            raise AssertionError(f"the core sent {task.sub_task_id} nowhere")
        (worker,) = out.sends[0].dst
        if worker == "c":  # the relay failed it back (no live worker)
            got = parse_packet_json(out.sends[0].blob)
            assert isinstance(got, ResultPacket)
            return got.payload
        await asyncio.sleep(0)  # the other sends go out before this one is answered
        body = self.answer(task, worker)
        back = self.c.receive(worker, self.c.adapter.encode(
            make_packet(PacketType.RESULT, body, run_id="run1", src=worker, seq=2).to_dict()), self.t)  # fmt: skip
        self.frames += [r.type or "" for r in back.records]
        got = parse_packet_json(back.sends[0].blob)
        assert isinstance(got, ResultPacket) and back.sends[0].dst == ("c",)
        return got.payload


def answered(task: SubTask, worker: str) -> SubTaskResult:
    return SubTaskResult(sub_task_id=task.sub_task_id, parent_task_id="run1", worker_agent_role=ANSWERER,
                         status="COMPLETED", result_data={"answer": f"a-{task.sub_task_input['id']}", "worker": worker,
                                                          "model_ms": 5.0, "tokens": 9})  # fmt: skip


def run_coordinator(tmp_path: Path, items: list[StreamItem], answer: Any, **settings: Any) -> tuple[ToolContext, Wire]:
    c = core()
    c.start("doc", "q?", 400, 0.0)
    wire = Wire(c, answer)
    plan = StreamPlan(workers=("w1", "w2", "w3"))
    text = plan.line() + "\n" + "".join(i.line() + "\n" for i in items)
    packet = doc_init("run1", text, "stream", 50)  # small chunks: an item's line spans several
    ctx = ToolContext(llm=LLMClient.__new__(LLMClient), workspace=tmp_path, ask=wire.ask,
                      settings=Settings(**settings))  # fmt: skip
    final = asyncio.run(coordinate(ctx, packet))
    assert final.answer.endswith(f"of {len(items)} items answered")
    return ctx, wire


def test_the_coordinator_answers_every_item_once_spread_over_the_workers(tmp_path: Path) -> None:
    items = [StreamItem(id=f"q{i}", q=f"question {i}?") for i in range(30)]
    ctx, wire = run_coordinator(tmp_path, items, answered)
    lines = [FateLine.model_validate_json(x) for x in (tmp_path / ITEMS_FILE).read_text().splitlines()]
    assert sorted(x.id for x in lines) == sorted(i.id for i in items)  # each told once
    assert all(x.status == "answered" and x.prediction == f"a-{x.id}" and x.model_ms == 5.0 for x in lines)
    summary = ctx.memory["stream"]
    assert summary["answered"] == 30 and summary["duplicates"] == 0 and sum(summary["per_worker"].values()) == 30
    assert set(summary["per_worker"]) == {"w1", "w2", "w3"} and min(summary["per_worker"].values()) > 0
    assert wire.frames.count("subtask") == 30 and wire.frames.count("result") == 30


def test_an_item_a_worker_fails_goes_to_another_and_one_failing_everywhere_ends_failed(tmp_path: Path) -> None:
    def flaky(task: SubTask, worker: str) -> SubTaskResult:
        bad = task.sub_task_input["id"] == "never" or (task.sub_task_input["id"] == "once" and worker == "w1")
        if not bad:
            return answered(task, worker)
        return SubTaskResult(sub_task_id=task.sub_task_id, parent_task_id="run1", worker_agent_role=ANSWERER,
                             status="FAILED", result_data={"worker": worker},
                             error_details={"message": "model down", "type": "ModelError"})  # type: ignore[arg-type]  # fmt: skip

    items = [StreamItem(id="once", q="a?"), StreamItem(id="never", q="b?"), StreamItem(id="fine", q="c?")]
    run_coordinator(tmp_path, items, flaky, stream_max_attempts=2)
    lines = {x.id: x for x in map(FateLine.model_validate_json, (tmp_path / ITEMS_FILE).read_text().splitlines())}
    assert lines["once"].status == "answered" and len(lines["once"].sends) == 2 and lines["once"].answered_by != "w1"
    assert lines["never"].status == "failed" and "ModelError: model down (send 2 of 2)" in lines["never"].why
    assert lines["fine"].status == "answered" and len(lines["fine"].sends) == 1


def test_a_stream_without_a_plan_workers_or_items_says_why(tmp_path: Path) -> None:
    plan = StreamPlan(workers=("w1",)).line() + "\n"
    with pytest.raises(TaskError, match="the stream's doc_init: empty"):
        read_stream(doc_init("run1", "\n", "stream"))
    with pytest.raises(TaskError, match="doc_init:1: not the stream's plan"):
        read_stream(doc_init("run1", json.dumps({"id": "a", "q": "b?"}) + "\n", "stream"))
    with pytest.raises(TaskError, match="doc_init:1: plan.workers: .*at least 1"):
        read_stream(doc_init("run1", json.dumps({"plan": {"workers": []}}) + "\n", "stream"))
    with pytest.raises(TaskError, match="the stream's doc_init: no items"):
        read_stream(doc_init("run1", plan, "stream"))
    with pytest.raises(TaskError, match="doc_init:2: q: Field required"):
        read_stream(doc_init("run1", plan + json.dumps({"id": "a"}) + "\n", "stream"))


def test_an_item_with_a_document_keeps_it_on_its_way_to_the_worker() -> None:
    item = StreamItem(id="t", q="Who?", doc="Ann Lee founded it.", answers=("Ann Lee",))
    assert StreamItem.model_validate_json(item.line()) == item
    plan = StreamPlan(workers=("w1",), policy="round-robin", per_worker=2)
    packet = doc_init("run1", plan.line() + "\n" + item.line() + "\n", "stream", 7)
    assert read_stream(packet) == (plan, [item])
    unnamed = make_packet(PacketType.SUBTASK, SubTask(
        sub_task_id="s", parent_task_id="p", assigned_agent_role=ANSWERER, tool_name="answer",
        sub_task_input={"id": "t", "q": "Who?"}), run_id="r", src="c", seq=1)  # fmt: skip
    # a sub-task that names no worker (the orchestrator's) is on the wire as it always was
    assert isinstance(unnamed, SubTaskPacket) and "assigned_agent_id" not in unnamed.to_dict()["payload"]
