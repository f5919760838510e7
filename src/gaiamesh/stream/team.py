"""A stream's team: the ``coordinator`` and its ``answerer`` workers, as ProtocolBench's
Streaming Queue has them.

- ``coordinator`` reads the stream's plan and items from its ``doc_init`` (one JSON line each:
  the harness sends them through the relay, counted like any frame; the plan, :mod:`.plan`,
  names the workers and the policy), and hands each item to a worker through the relay's
  sub-task queue, naming the worker :class:`~.dispatch.Dispatcher` chose (the next free one, or
  the next in turn). An item the relay gives back ``FAILED`` (no live
  worker), or whose result does not come within ``SUBTASK_TIMEOUT``, goes to another worker, up
  to ``STREAM_MAX_ATTEMPTS`` sends. Each item's fate is appended to ``items.jsonl`` in its
  workspace as the item ends, and the run's answer says how many were answered.
- ``answerer`` answers one item with the model: a direct call for a bare question (the answer
  prompt with no context), the pipeline's four stages inside the worker for an item with a
  document. It reports who it is and the model's time and tokens with the answer.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import IO, Any

from ..errors import ModelError, TaskError, ToolError
from ..mesh.frames import FINAL_ANSWER_TAG, DocInitPacket, PacketType, SubTaskPacket
from ..mesh.payloads import ErrorDetails, FinalAnswer, SubTask, SubTaskResult
from ..models.prompts import answer_prompt, clean_answer
from ..orchestrated.plan_tools import AnswerQuestion
from ..orchestrated.workers import answer_question
from ..settings import ToolSettings
from ..tools.tool import Tool, ToolContext
from .dispatch import TOLD, Dispatcher, Fate
from .items import BOM, StreamItem, items_of
from .plan import StreamPlan
from .records import fate_line
from .summary import summarize

COORDINATOR, ANSWERER = "coordinator", "answerer"
ITEMS_FILE = "items.jsonl"  # in the coordinator's workspace for the run: one line per item as it ends
ANSWER_TOKENS = 48  # a short answer; MS MARCO's reference answers are a sentence or less


class StreamFailed(ToolError):
    """The stream could not run (not in an agent); the message says why."""


def _settings(ctx: ToolContext) -> ToolSettings:
    if ctx.settings is None or ctx.ask is None or ctx.workspace is None:
        raise StreamFailed("the coordinator runs in an agent (settings, a workspace, the relay's queue)")
    return ctx.settings


class FateLog:
    """``items.jsonl``: each item's fate (:class:`~gaiamesh.evaluation.streams.FateLine`), appended and flushed as
    the item ends, so that a stream cut short keeps what it finished."""

    def __init__(self, path: Path, started: float) -> None:
        self.started = started
        self._file: IO[str] = path.open("a", encoding="utf-8")

    def write(self, fate: Fate, report: dict[str, Any]) -> None:
        line = fate_line(
            fate, self.started, report.get("ids"), report.get("model_ms"), report.get("tokens")
        )
        self._file.write(line.model_dump_json() + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


class Coordination:
    """One stream's coordinator: the dispatcher's decisions carried out through ``ctx.ask``."""

    def __init__(self, ctx: ToolContext, packet: DocInitPacket, plan: StreamPlan) -> None:
        settings = _settings(ctx)
        self.ctx, self.packet, self.plan = ctx, packet, plan
        self.workers = list(plan.workers)
        self.dispatcher = Dispatcher(
            self.workers, plan.policy, plan.per_worker, max_attempts=settings.stream_max_attempts
        )
        self.timeout = settings.subtask_timeout
        self.started = time.monotonic()
        self.reports: dict[str, dict[str, Any]] = {}  # item id -> the sub-task ids sent, model time, tokens
        self.sends = 0

    def _task(self, item: StreamItem, worker: str) -> SubTask:
        self.sends += 1
        task_id = f"{self.packet.run_id}.{self.sends}"
        fate = self.dispatcher.fates[item.id]
        self.reports.setdefault(item.id, {}).setdefault("ids", {})[len(fate.attempts) - 1] = task_id
        given: dict[str, Any] = {"id": item.id, "q": item.q} | ({"doc": item.doc} if item.doc else {})
        return SubTask(
            sub_task_id=task_id, parent_task_id=self.packet.run_id, assigned_agent_role=ANSWERER,
            tool_name="answer", sub_task_input=given, assigned_agent_id=worker,
        )  # fmt: skip

    async def _send(self, task: SubTask) -> SubTaskResult | None:
        assert self.ctx.ask is not None
        try:
            return await self.ctx.ask(task)
        except TimeoutError:
            return None

    def _apply(self, item: StreamItem, worker: str, result: SubTaskResult | None) -> None:
        d, now = self.dispatcher, time.monotonic()
        if result is None:
            d.failed(item.id, worker, now, f"no result within SUBTASK_TIMEOUT={self.timeout:.0f}s")
            return
        data = result.result_data if isinstance(result.result_data, dict) else {}
        by = str(data.get("worker") or worker)
        if by != worker and by in d.workers:
            d.moved(item.id, worker, by, now)  # the relay handed it on: the chosen worker was lost
            worker = by
        if result.status == "COMPLETED":
            report = self.reports.setdefault(item.id, {})
            report["model_ms"], report["tokens"] = data.get("model_ms"), data.get("tokens")
            d.answered(item.id, worker, now, str(data.get("answer", "")))
        else:
            details = result.error_details or ErrorDetails(message="no details")
            d.failed(item.id, worker, now, f"{details.type or 'Failed'}: {details.message}")

    async def run(self, items: list[StreamItem]) -> list[Fate]:
        assert self.ctx.workspace is not None  # checked by _settings when the coordination began
        d, log = self.dispatcher, FateLog(self.ctx.workspace / ITEMS_FILE, self.started)
        pending: dict[asyncio.Task[SubTaskResult | None], tuple[StreamItem, str]] = {}
        told: set[str] = set()
        feed = iter(items)
        try:
            async with asyncio.TaskGroup() as group:
                while True:
                    for item in (next(feed, None) for _ in range(d.wants)):
                        if item is not None:
                            d.add(item, time.monotonic())
                    for item, worker in d.assign(time.monotonic()):
                        pending[group.create_task(self._send(self._task(item, worker)))] = (item, worker)
                    if not pending:
                        break
                    done, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                    for finished in done:
                        item, worker = pending.pop(finished)
                        self._apply(item, worker, finished.result())
                        fate = d.fates[item.id]
                        if fate.status in TOLD and item.id not in told:
                            told.add(item.id)
                            log.write(fate, self.reports.get(item.id, {}))
        finally:
            log.close()
        return list(d.fates.values())


def read_stream(packet: DocInitPacket) -> tuple[StreamPlan, list[StreamItem]]:
    """The plan and the items the harness put in the stream's ``doc_init`` (one JSON line each,
    the plan first)."""
    where = "the stream's doc_init"
    lines = "".join(packet.payload.chunks).encode("utf-8").removeprefix(BOM).splitlines(keepends=True)
    first = next((n for n, raw in enumerate(lines) if raw.strip()), None)
    if first is None:
        raise TaskError(f"{where}: empty; a stream's first line is its plan, then one item a line")
    plan = StreamPlan.of_line(lines[first], where)
    lines[first] = b"\n"  # read past, so that an item's error names its own line
    return plan, list(items_of(lines, where))


async def coordinate(ctx: ToolContext, packet: DocInitPacket) -> FinalAnswer:
    plan, items = read_stream(packet)
    coordination = Coordination(ctx, packet, plan)
    fates = await coordination.run(items)
    summary = summarize(fates, coordination.workers)
    ctx.memory["stream"] = summary.model_dump(mode="json")
    return FinalAnswer(
        answer=f"{summary.answered} of {summary.items} items answered" + (f", {summary.empty} empty" if summary.empty else ""), question=packet.question, reading="",
        method=f"stream ({plan.policy}, {len(plan.workers)} workers, {plan.per_worker} in flight each)",
        candidates=[], facts_used=0, triples_seen=0, made_by={"answers": "model", "dispatch": "tool"},
    )  # fmt: skip


async def answer(ctx: ToolContext, packet: SubTaskPacket) -> SubTaskResult:
    """One item's answer with the model (see the module's docstring)."""
    task = packet.payload
    reply: dict[str, Any] = {"sub_task_id": task.sub_task_id, "parent_task_id": task.parent_task_id,
                             "worker_agent_role": ANSWERER}  # fmt: skip
    try:
        item = StreamItem.model_validate(task.sub_task_input)
        if item.doc:
            text = str((await answer_question(ctx, AnswerQuestion(question=item.q, text=item.doc)))[0])
        else:
            text = clean_answer(
                await ctx.llm.complete(answer_prompt("", item.q), ctx.usage, num_predict=ANSWER_TOKENS)
            )
    except (ModelError, ValueError, LookupError) as exc:
        return SubTaskResult(**reply, status="FAILED", result_data={"worker": ctx.node_id},
                             error_details=ErrorDetails(message=str(exc), type=type(exc).__name__))  # fmt: skip
    data = {
        "answer": text,
        "worker": ctx.node_id,
        "model_ms": round(ctx.usage.llm_ms, 3),
        "tokens": ctx.usage.tokens,
    }
    ctx.memory.setdefault("items", []).append(item.id)
    return SubTaskResult(**reply, status="COMPLETED", result_data=data, made_by="model")


TOOLS: tuple[Tool, ...] = (
    Tool(COORDINATOR, PacketType.DOC_INIT, PacketType.DATA_EVENT, coordinate, tag=FINAL_ANSWER_TAG,
         description="hands a stream's items to its workers, one to the next free worker",
         reads=frozenset({PacketType.RESULT})),
    Tool(ANSWERER, PacketType.SUBTASK, PacketType.RESULT, answer, description="answers one item of a stream with the model"),
)  # fmt: skip
