"""``RelayCore``: every decision and every count of one run, with no I/O and no asyncio.

The transport (``relay.py``) feeds it events, each with the time it happened:
``start`` (t=0, the document), ``receive`` (a frame from an agent), ``lost`` (an agent's
connection closed), ``expire`` (the run timeout) and ``fail``; each returns an
:class:`Outcome`: the frame records to log, the bytes to send to whom, progress lines, and
the end of the run when it ended. Validation, routing, redelivery to a same-tool replica,
accounting and final-answer detection all live here, so they are tested with plain calls.

Counters change only in :meth:`_log`, which folds each frame record into the totals with
the same :meth:`Totals.add` that ``gaiamesh audit`` uses on ``frames.jsonl``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ..evaluation.metrics import AgentMetrics, FrameRecord, FrameStatus, Totals
from .frames import (
    FINAL_ANSWER_TAG,
    NETWORK_SRC,
    DataEventPacket,
    ErrorDetails,
    ErrorPacket,
    FrameError,
    Packet,
    PacketType,
    ResultPacket,
    SubTaskPacket,
    SubTaskResult,
    Turn,
    doc_init,
    make_packet,
)
from .protocols import ProtocolAdapter
from .routing import Router, RoutingMode


@dataclass(frozen=True)
class Send:
    """Write ``blob`` to each agent in ``dst``."""

    dst: tuple[str, ...]
    blob: bytes


@dataclass(frozen=True)
class RunEnd:
    status: str
    error: str | None = None


@dataclass
class Outcome:
    """What the transport must do after one event, in order: log, send, report, maybe stop.

    ``notes`` are progress lines for events that are not frames (an agent lost, the end);
    the transport describes frames from their records, and only when someone reads it."""

    records: list[FrameRecord] = field(default_factory=list)
    sends: list[Send] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    end: RunEnd | None = None
    wake_at: float | None = None  # call :meth:`RelayCore.tick` at this time (a grace running out)


@dataclass
class _Work:
    """A packet delivered to an agent that consumes it, not yet answered."""

    blob: bytes
    packet: Packet
    header: int


@dataclass
class _Assigned:
    """A sub-task handed to a worker, not yet answered with a result."""

    worker: str
    work: _Work


SUBTASK = PacketType.SUBTASK.value
QUEUED = frozenset({PacketType.SUBTASK.value, PacketType.RESULT.value})


class RelayCore:
    """The relay's state machine for one run over a fixed line-up of agents."""

    def __init__(
        self,
        run_id: str,
        adapter: ProtocolAdapter,
        agents: Iterable[tuple[str, str]],
        mode: RoutingMode = RoutingMode.AUTO,
        topics: Mapping[str, frozenset[str]] | None = None,
        max_frame_bytes: int = 1_048_576,
        origin: float = 0.0,
        rejoin_grace: float = 0.0,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        lineup = list(agents)
        # Times the decoding of each frame that comes in (the protocol's cost per message);
        # every other time comes in with the event.
        self.clock = clock
        # Seconds the run waits for an agent of a tool whose every agent is lost (0: it ends
        # `agent_dead` at once). Work for that tool waits too, and goes to the first that returns.
        self.rejoin_grace = rejoin_grace
        self._waiting: dict[str, tuple[float, list[_Work]]] = {}  # tool -> (deadline, pending work)
        self.run_id = run_id
        self.adapter = adapter
        self.max_frame_bytes = max_frame_bytes
        self.router = Router(mode, lineup, topics)
        self.totals = Totals()
        self.agents = {n: AgentMetrics(node_id=n, tool=t) for n, t in lineup}
        self.origin = origin  # frame times are relative to this (the run's wall start)
        self.t0: float | None = None  # doc_init: the clock starts
        self.done_at: float | None = None
        self.end: RunEnd | None = None
        self.final: DataEventPacket | None = None
        self._in_flight: dict[str, _Work] = {}  # pipeline work, one per agent
        self._tools_done: set[str] = set()
        self._init: _Work | None = None  # doc_init, for an agent that comes back mid-run
        self._owners: dict[str, str] = {}  # sub_task_id -> the orchestrator that sent it
        self._assigned: dict[str, _Assigned] = {}  # sub_task_id -> worker working on it
        self._seq = 0  # sequence numbers of the relay's own packets (doc_init is 0)

    # --- registration ---------------------------------------------------------------------
    def register(
        self, node_id: str, consumes: frozenset[str] | None = None, reads: frozenset[str] = frozenset()
    ) -> None:
        """An agent is connected; ``consumes`` and ``reads`` are what it announced (None: use
        the configuration)."""
        if consumes is not None:
            self.router.subscribe(node_id, consumes, reads)
        self.agents[node_id].status = "connected"

    # --- events ---------------------------------------------------------------------------
    def start(
        self, doc: str, question: str, chunk_size: int, now: float, history: Sequence[Turn] = ()
    ) -> Outcome:
        """t=0, ``broadcast_init``: the document in chunks, the question and the conversation's
        earlier turns to the agents."""
        self.t0 = now
        out = Outcome()
        packet = doc_init(self.run_id, doc, question, chunk_size, list(history))
        blob = self.adapter.encode(packet.to_dict())
        header = self.adapter.header_bytes(blob, packet)
        dst = self.router.destinations(packet.type.value, NETWORK_SRC)
        self._init = _Work(blob, packet, header)
        self._deliver(out, NETWORK_SRC, blob, packet, header, dst, now, received=False)
        return out

    def rejoin(
        self, node_id: str, now: float, consumes: frozenset[str] | None = None, reads: frozenset[str] = frozenset()
    ) -> Outcome:
        """Agent ``node_id`` is back (restarted, reconnected): register it again and route to it.
        It gets the run's ``doc_init`` again (marked ``redelivered``) so it knows the run, unless
        its tool works on ``doc_init`` and has already answered (it would answer twice)."""
        out = Outcome()
        stats = self.agents[node_id]
        self.register(node_id, consumes, reads)
        self.router.restore(node_id)
        stats.note = f"rejoined at {self._ms(now):.0f} ms"
        if self.end is not None or self._init is None:
            return out
        tool = stats.tool
        out.notes.append(f"[{self._s(now):7.2f}s] agent {node_id} ({tool}) rejoined the run")
        init = self._init
        if not (self.router.consumes(node_id, init.packet.type.value) and tool in self._tools_done):
            self._deliver(out, NETWORK_SRC, init.blob, init.packet, init.header, [node_id], now, received=False,
                          status="redelivered")  # fmt: skip
        _, pending = self._waiting.pop(tool, (0.0, []))
        for work in pending:  # what waited for its tool while none of its agents was alive
            self._deliver(out, NETWORK_SRC, work.blob, work.packet, work.header, [node_id], now, received=False,
                          status="redelivered")  # fmt: skip
        if pending:
            out.notes.append(f"[{self._s(now):7.2f}s] agent {node_id} takes over {len(pending)} waiting packet(s)")
        return out

    def tick(self, now: float) -> Outcome:
        """Time passed: a tool that waited ``rejoin_grace`` for an agent in vain ends the run."""
        out = Outcome()
        if self.end is not None:
            return out
        for tool, (deadline, _) in list(self._waiting.items()):
            if now >= deadline:
                self._finish(out, now, "agent_dead",
                             f"no {tool!r} agent is alive and none came back within "
                             f"REJOIN_GRACE={self.rejoin_grace:.0f}s")  # fmt: skip
                break
        return out

    def receive(self, src: str, blob: bytes, now: float) -> Outcome:
        """One frame from agent ``src``: validate, route, count, detect the final answer."""
        out = Outcome()
        if self.end is not None:
            # The run is over: the frame is still on the books, but nobody receives it.
            self._reject(out, src, blob, now, f"run {self.run_id} already ended ({self.end.status})")
            return out
        started = self.clock()
        try:
            packet = self._validate(src, blob)
        except FrameError as exc:
            self._reject(out, src, blob, now, str(exc), (self.clock() - started) * 1e6)
            return out
        decode_us = (self.clock() - started) * 1e6
        header = self.adapter.header_bytes(blob, packet)
        if isinstance(packet, SubTaskPacket):
            # An orchestrator handing out sub-tasks is still working on its doc_init.
            self._owners[packet.payload.sub_task_id] = src
            dst = self._pick_worker(packet, ())
            self._deliver(out, src, blob, packet, header, dst, now, received=True, decode_us=decode_us)
            if not dst:
                role = packet.payload.assigned_agent_role
                self._fail_subtask(out, packet, f"no live {role!r} agent in this run", now)
            return out
        if isinstance(packet, ResultPacket):
            self._assigned.pop(packet.payload.sub_task_id, None)
            owner = self._owners.get(packet.payload.sub_task_id)
            dst = [owner] if owner in self.router.live else self.router.subscribers(packet.type.value, src)
            self._deliver(out, src, blob, packet, header, dst, now, received=True, decode_us=decode_us)
            return out
        self._in_flight.pop(src, None)  # the agent answered: its work is no longer in flight
        if isinstance(packet, ErrorPacket):
            self._deliver(out, src, blob, packet, header, [], now, received=True, decode_us=decode_us)
            message = f"agent {src} ({self.router.tool_of(src)}) failed: {packet.payload.error}"
            self.agents[src].note = message
            out.notes.append(f"[{self._s(now):7.2f}s] {message}")
            status = "model_unreachable" if packet.payload.kind == "model_unreachable" else "agent_error"
            self._finish(out, now, status, message)
            return out
        self._tools_done.add(self.router.tool_of(src))
        dst = self.router.destinations(packet.type.value, src)
        self._deliver(out, src, blob, packet, header, dst, now, received=True, decode_us=decode_us)
        for tool, (_, pending) in self._waiting.items():
            if self.router.tool_consumes(tool, packet.type.value):
                pending.append(_Work(blob, packet, header))  # for the first of its agents to return
        if isinstance(packet, DataEventPacket) and packet.tag == FINAL_ANSWER_TAG and self.final is None:
            self.final = packet
            self._finish(out, now, "ok")
        return out

    def lost(self, node_id: str, reason: str, now: float) -> Outcome:
        """Agent ``node_id`` is gone: deregister it; hand its work in flight to a live
        same-tool agent, or end the run when its tool is needed and none is left."""
        out = Outcome()
        stats = self.agents[node_id]
        if stats.status == "dead":
            return out
        stats.status = "dead"
        stats.note = f"disconnected at {self._ms(now):.0f} ms: {reason}"
        self.router.remove(node_id)
        work = self._in_flight.pop(node_id, None)
        if self.end is not None:
            return out
        tool = stats.tool
        out.notes.append(f"[{self._s(now):7.2f}s] agent {node_id} ({tool}) disconnected: {reason}")
        if self.router.consumes(node_id, SUBTASK):
            # A worker: its sub-tasks go to a live worker of its role, or fail back to their
            # orchestrator, whose plan decides what happens next. The run goes on.
            for task_id, assigned in list(self._assigned.items()):
                if assigned.worker == node_id:
                    self._reassign(out, task_id, assigned, now)
            return out
        if work is None and tool in self._tools_done:
            return out  # its part of the pipeline is already done
        if not self.router.group_alive(tool):
            if self.rejoin_grace > 0:
                deadline, pending = self._waiting.get(tool, (now + self.rejoin_grace, []))
                self._waiting[tool] = (deadline, pending + ([work] if work is not None else []))
                out.notes.append(
                    f"[{self._s(now):7.2f}s] no {tool!r} agent is alive: waiting up to "
                    f"{self.rejoin_grace:.0f}s (REJOIN_GRACE) for one to come back"
                )
                out.wake_at = deadline
                return out
            self._finish(
                out,
                now,
                "agent_dead",
                f"agent {node_id} ({tool}) disconnected and no other {tool!r} agent is alive",
            )
            return out
        if work is not None:
            dst = self.router.destinations(work.packet.type.value, work.packet.src, exclude=[node_id])
            dst = [n for n in dst if self.router.tool_of(n) == tool][:1]
            self._deliver(
                out, NETWORK_SRC, work.blob, work.packet, work.header, dst, now, received=False,
                status="redelivered",
            )  # fmt: skip
            out.notes.append(
                f"[{self._s(now):7.2f}s] redelivered {work.packet.type.value} to {','.join(dst)}"
            )
        return out

    def expire(self, now: float, timeout: float) -> Outcome:
        """``RUN_TIMEOUT`` passed without a final answer."""
        out = Outcome()
        self._finish(out, now, "timeout", f"no final answer within RUN_TIMEOUT={timeout:g}s")
        return out

    def fail(self, status: str, error: str, now: float) -> Outcome:
        """The run cannot go on (e.g. an agent unreachable at connect time)."""
        out = Outcome()
        self._finish(out, now, status, error)
        return out

    # --- queues -----------------------------------------------------------------------------
    def _pick_worker(self, packet: SubTaskPacket, exclude: Iterable[str]) -> list[str]:
        return self.router.pick(packet.payload.assigned_agent_role, [packet.src, *exclude])

    def _reassign(self, out: Outcome, task_id: str, assigned: _Assigned, now: float) -> None:
        work = assigned.work
        assert isinstance(work.packet, SubTaskPacket)
        del self._assigned[task_id]
        dst = self._pick_worker(work.packet, [assigned.worker])
        if not dst:
            role = work.packet.payload.assigned_agent_role
            self._fail_subtask(
                out, work.packet, f"worker {assigned.worker} died and no other live {role!r} agent is left", now
            )
            return
        self._deliver(
            out, NETWORK_SRC, work.blob, work.packet, work.header, dst, now, received=False, status="redelivered"
        )
        out.notes.append(f"[{self._s(now):7.2f}s] redelivered sub-task {task_id} to {dst[0]}")

    def _fail_subtask(self, out: Outcome, packet: SubTaskPacket, message: str, now: float) -> None:
        """Answer a sub-task nobody can take with a ``FAILED`` result from the relay itself."""
        task = packet.payload
        self._seq += 1
        result = make_packet(
            PacketType.RESULT,
            SubTaskResult(
                sub_task_id=task.sub_task_id, parent_task_id=task.parent_task_id,
                worker_agent_role=task.assigned_agent_role, status="FAILED",
                error_details=ErrorDetails(message=message, type="WorkerUnavailable"),
            ),
            run_id=self.run_id, src=NETWORK_SRC, seq=self._seq, question=packet.question,
        )  # fmt: skip
        blob = self.adapter.encode(result.to_dict())
        owner = self._owners.get(task.sub_task_id, packet.src)
        dst = [owner] if owner in self.router.live else []
        self._deliver(out, NETWORK_SRC, blob, result, self.adapter.header_bytes(blob, result), dst, now, received=False)
        out.notes.append(f"[{self._s(now):7.2f}s] sub-task {task.sub_task_id} failed: {message}")

    # --- inside ---------------------------------------------------------------------------
    def _validate(self, src: str, blob: bytes) -> Packet:
        if len(blob) > self.max_frame_bytes:
            raise FrameError(f"oversized frame: {len(blob)} bytes > MAX_FRAME_BYTES={self.max_frame_bytes}")
        packet = self.adapter.decode_packet(blob)
        if packet.src != src:
            raise FrameError(f"packet claims src {packet.src!r} but arrived from agent {src!r}")
        if packet.run_id != self.run_id:
            raise FrameError(f"packet belongs to run {packet.run_id!r}, not the current run {self.run_id!r}")
        if packet.type is PacketType.DOC_INIT:
            raise FrameError("doc_init comes from the relay only")
        if isinstance(packet, SubTaskPacket) and packet.payload.sub_task_id in self._owners:
            raise FrameError(f"sub-task id {packet.payload.sub_task_id!r} is already used in this run")
        if isinstance(packet, ResultPacket):
            # A result must answer a sub-task its sender is working on: no stray, duplicate or
            # forged results reach the orchestrator.
            task_id = packet.payload.sub_task_id
            assigned = self._assigned.get(task_id)
            if task_id not in self._owners:
                raise FrameError(f"result for unknown sub-task {task_id!r}")
            if assigned is None:
                raise FrameError(f"result for sub-task {task_id!r}, which no agent is working on (answered already?)")
            if assigned.worker != src:
                raise FrameError(f"result for sub-task {task_id!r} from agent {src!r}; it is assigned to {assigned.worker!r}")
        return packet

    def _deliver(
        self,
        out: Outcome,
        src: str,
        blob: bytes,
        packet: Packet,
        header: int,
        dst: list[str],
        now: float,
        received: bool,
        status: FrameStatus = "accepted",
        decode_us: float | None = None,
    ) -> None:
        ptype = packet.type.value
        if isinstance(packet, SubTaskPacket):
            for node_id in dst:
                self._assigned[packet.payload.sub_task_id] = _Assigned(node_id, _Work(blob, packet, header))
        elif ptype not in QUEUED:
            consumes = self.router.consumes
            for node_id in dst:
                if consumes(node_id, ptype):  # work to redeliver if it dies (not what it only reads)
                    self._in_flight[node_id] = _Work(blob, packet, header)
        self._log(
            out,
            FrameRecord.of(
                n=self.totals.frames, t_ms=self._rel(now), src=src, dst=dst, blob=blob, received=received,
                status=status, header_size=header, type=ptype, tag=packet.tag,
                token_used=packet.token_used, llm_ms=packet.llm_ms, decode_us=decode_us,
            ),
        )  # fmt: skip
        if dst:
            out.sends.append(Send(tuple(dst), blob))

    def _reject(
        self, out: Outcome, src: str, blob: bytes, now: float, error: str, decode_us: float | None = None
    ) -> None:
        self._log(
            out,
            FrameRecord.of(
                n=self.totals.frames, t_ms=self._rel(now), src=src, dst=[], blob=blob, received=True,
                status="rejected", error=error, decode_us=decode_us,
            ),
        )  # fmt: skip

    def _log(self, out: Outcome, record: FrameRecord) -> None:
        # The one place counters change: from the record that goes into frames.jsonl.
        self.totals.add(record, self.agents)
        out.records.append(record)

    def _finish(self, out: Outcome, now: float, status: str, error: str | None = None) -> None:
        if self.end is not None:
            return
        self.end = RunEnd(status, error)
        self.done_at = now
        out.end = self.end
        out.notes.append(f"[{self._s(now):7.2f}s] run ends: {status}" + (f" ({error})" if error else ""))

    def _rel(self, now: float) -> float:
        return (now - self.origin) * 1000

    def _ms(self, now: float) -> float:
        return (now - (self.t0 if self.t0 is not None else self.origin)) * 1000

    def _s(self, now: float) -> float:
        return self._rel(now) / 1000  # progress lines: same origin as the frame records' t_ms

    def elapsed_ms(self, now: float) -> float:
        """t=0 (doc_init) to the end of the run (or ``now`` while it runs)."""
        start = self.t0 if self.t0 is not None else self.origin
        end = self.done_at if self.done_at is not None else now
        return (end - start) * 1000
