"""``RelayCore``: every decision and every count of one run, with no I/O and no asyncio.

The transport (``relay.py``) feeds it events, each with the time it happened:
``start`` (t=0, the document), ``receive`` (a frame from an agent), ``lost`` (an agent's
connection closed), ``rejoin`` (it answered again), ``join`` (a replica found by DNS mid-run),
``leave`` (a lost replica whose address left DNS), ``expire`` (the run timeout) and ``fail``;
each returns an :class:`Outcome`: the frame records to log, the bytes to send to whom,
progress lines, and the end of the run when it ended. Validation, routing, redelivery to a same-tool replica,
accounting and final-answer detection all live here, so they are tested with plain calls.

Counters change only in :meth:`_log`, which folds each frame record into the totals with
the same :meth:`Totals.add` that ``gaiamesh audit`` uses on ``frames.jsonl``.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ..errors import run_status
from ..evaluation.metrics import (
    AgentMetrics,
    FaultNote,
    FrameRecord,
    FrameStatus,
    MemberChange,
    MemberEvent,
    Totals,
)
from .faults import Fate, FaultModel
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


@dataclass(order=True)
class _Held:
    """What the network fault model holds until ``due`` (the relay's clock): a copy on its way to
    agent ``node`` (``send``), a frame from ``node`` on its way in (``arrive``), or the next copy
    of a lost one to ``node`` (``retry``, its ``attempt``-th: 1 is the first redelivery)."""

    due: float
    order: int  # of two due at once, the one the model decided first goes first
    kind: Literal["send", "arrive", "retry"] = field(compare=False)
    node: str = field(compare=False)
    blob: bytes = field(compare=False)
    fate: Fate | None = field(default=None, compare=False)
    work: _Work | None = field(default=None, compare=False)
    attempt: int = field(default=0, compare=False)


@dataclass
class _Network:
    """The core's side of the network fault model: what the links hold, the ticks it asked for."""

    model: FaultModel | None
    wire: list[_Held] = field(default_factory=list)  # copies to agents: a heap by (due, order)
    later: list[_Held] = field(default_factory=list)  # arrivals and redeliveries: a heap
    wakes: set[float] = field(default_factory=set)  # ticks asked of the transport, still to come
    arriving: _Held | None = None  # the held frame being taken in now
    retrying: Fate | None = None  # the fate of the redelivery being made now


EPS = 0.001  # seconds: a tick releases what is due this close (a timer may fire a hair early)
SUBTASK = PacketType.SUBTASK.value
QUEUED = frozenset({PacketType.SUBTASK.value, PacketType.RESULT.value})


class RelayCore:
    """The relay's state machine for one run over a line-up of agents that starts as given, and
    grows by the replicas :meth:`join` adds (a let go one stays, counted, but is waited for no more)."""

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
        faults: FaultModel | None = None,
        sources: Mapping[str, str] | None = None,
        share_start: int = 0,
    ) -> None:
        lineup = list(agents)
        # node id -> the src its packets carry, where that is not the node id itself: replicas
        # found through one dns: entry of AGENTS share its NODE_ID (see discovery.py).
        self._sources = dict(sources or {})
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
        self.router = Router(mode, lineup, topics, share_start)
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
        self._net = _Network(faults)  # what the network fault model holds (nothing without faults)
        self.membership: list[MemberEvent] = []  # agents lost, back, joined, let go: metrics.json

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
        self.router.restore(node_id)
        return self._welcome(node_id, now, consumes, reads, "rejoined")

    def join(
        self,
        node_id: str,
        tool: str,
        now: float,
        consumes: frozenset[str] | None = None,
        reads: frozenset[str] = frozenset(),
        stamps: str | None = None,
    ) -> Outcome:
        """A replica found by DNS while the run goes on is connected (``stamps``: the entry's node
        id it puts in its packets' ``src``): add it to the line-up and route to it from now on,
        as :meth:`rejoin` does (the run's ``doc_init``, the work that waits for its tool). One
        that was let go and came back keeps the counts it had."""
        self.agents.setdefault(node_id, AgentMetrics(node_id=node_id, tool=tool))
        if stamps is not None and stamps != node_id:
            self._sources[node_id] = stamps
        was = self.router.mode
        self.router.add(node_id, tool)
        out = self._welcome(node_id, now, consumes, reads, "joined")
        if self.router.mode is not was and self.end is None:
            out.notes.append(f"[{self._s(now):7.2f}s] routing {was.value} -> {self.router.mode.value}: "
                             f"{tool!r} has {len(self.router.members(tool))} live agents")  # fmt: skip
        return out

    def leave(self, node_id: str, reason: str, now: float) -> Outcome:
        """Let go of lost replica ``node_id`` (its address left DNS): nothing waits for it any
        more. :meth:`lost` already handed its work on, or holds it for its tool's next agent."""
        out = Outcome()
        stats = self.agents[node_id]
        if stats.status != "dead":
            return out  # only a lost agent is let go: a connected one is still in the run
        stats.status = "left"
        stats.note = f"{stats.note}; let go at {self._ms(now):.0f} ms: {reason}".lstrip("; ")
        self._member(now, node_id, "left")
        if self.end is None:
            out.notes.append(f"[{self._s(now):7.2f}s] agent {node_id} ({stats.tool}) let go: {reason}")
        return out

    def _welcome(
        self,
        node_id: str,
        now: float,
        consumes: frozenset[str] | None,
        reads: frozenset[str],
        how: MemberChange,
    ) -> Outcome:
        """Agent ``node_id`` is connected and routable (it ``rejoined`` or ``joined``): it gets the
        run's ``doc_init``, and the work that waited for its tool."""
        out = Outcome()
        stats = self.agents[node_id]
        self.register(node_id, consumes, reads)
        stats.note = f"{how} at {self._ms(now):.0f} ms"
        self._member(now, node_id, how)
        if self.end is not None or self._init is None:
            return out
        tool = stats.tool
        out.notes.append(f"[{self._s(now):7.2f}s] agent {node_id} ({tool}) {how} the run")
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

    def _member(self, now: float, node_id: str, event: MemberChange) -> None:
        self.membership.append(MemberEvent(round(self._rel(now), 3), node_id, self.agents[node_id].tool, event))

    def tick(self, now: float) -> Outcome:
        """Time passed: a tool that waited ``rejoin_grace`` for an agent in vain ends the run."""
        out = Outcome()
        if self.end is not None:
            return out
        self._release(out, now)  # network faults: what the links held until now
        for tool, (deadline, _) in list(self._waiting.items()):
            if now >= deadline:
                self._finish(out, now, "agent_dead",
                             f"no {tool!r} agent is alive and none came back within "
                             f"REJOIN_GRACE={self.rejoin_grace:.0f}s")  # fmt: skip
                break
        return out

    def receive(self, src: str, blob: bytes, now: float) -> Outcome:
        """One frame from agent ``src``: validate, route, count, detect the final answer."""
        if (held := self._hold_arrival(src, blob, now)) is not None:
            return held  # network faults: still on the sender's link; taken in when it arrives
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
            self._finish(out, now, run_status(packet.payload.as_error(message)), message)
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
        if stats.status in ("dead", "left"):
            return out
        stats.status = "dead"
        stats.note = f"disconnected at {self._ms(now):.0f} ms: {reason}"
        self._member(now, node_id, "lost")
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
        if packet.src != (stamps := self._sources.get(src, src)):
            which = f" (which stamps {stamps!r})" if stamps != src else ""
            raise FrameError(f"packet claims src {packet.src!r} but arrived from agent {src!r}{which}")
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
        dst, fault, lost = self._impose(out, blob, dst, now)  # network faults: copies held, lost
        self._log(
            out,
            FrameRecord.of(
                n=self.totals.frames, t_ms=self._rel(now), src=src, dst=dst, blob=blob, received=received,
                status=status, header_size=header, type=ptype, tag=packet.tag,
                token_used=packet.token_used, seq=packet.seq if received else None, decode_us=decode_us,
                fault=fault,
            ),
        )  # fmt: skip
        if dst and self._net.model is None:
            out.sends.append(Send(tuple(dst), blob))
        for node_id, fate in lost:
            self._lose(out, src, _Work(blob, packet, header), node_id, fate, 0, now)

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
        self._let_go(out, now)
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

    # --- network faults (FAULT_*): faults.py decides each crossing; the core holds, logs and
    # redelivers by that decision, and asks the transport for a tick when something falls due --
    def _run_s(self, now: float) -> float:
        return now - (self.t0 if self.t0 is not None else self.origin)

    def _clock(self, t: float) -> float:
        return t + (self.t0 if self.t0 is not None else self.origin)

    def _hold_arrival(self, src: str, blob: bytes, now: float) -> Outcome | None:
        """A frame from ``src`` goes in line on its link; whatever has arrived by ``now`` is taken
        in, in order (None: no faults, or this is a held frame being taken in)."""
        net = self._net
        if net.model is None or net.arriving is not None or self.end is not None:
            return None
        fate = net.model.decide(src, NETWORK_SRC, self._run_s(now))
        out = Outcome()
        self._hold(out, net.later, _Held(self._clock(fate.at), fate.order, "arrive", src, blob, fate), now)
        self._release(out, now)
        return out

    def _impose(
        self, out: Outcome, blob: bytes, dst: list[str], now: float
    ) -> tuple[list[str], FaultNote | None, list[tuple[str, Fate]]]:
        """Each copy's fate: ``dst`` without the lost copies, the frame's :class:`FaultNote`, and
        the lost copies (logged apart, and redelivered). The copies that go are held until they
        arrive; whatever is due goes out now, in order."""
        net = self._net
        if net.model is None:
            return dst, None, []
        arriving, net.arriving = net.arriving, None  # the hold on the way in is this frame's only
        retrying, net.retrying = net.retrying, None
        causes: set[str] = set(arriving.fate.causes) if arriving and arriving.fate else set()
        held: dict[str, float] = {}
        kept: list[str] = []
        lost: list[tuple[str, Fate]] = []
        for node_id in dst:
            fate = retrying or net.model.decide(NETWORK_SRC, node_id, self._run_s(now))
            if fate.lost and retrying is None:
                lost.append((node_id, fate))
                continue
            kept.append(node_id)
            causes.update(fate.causes)
            if fate.delay_ms > 0:
                held[node_id] = fate.delay_ms
            self._hold(out, net.wire, _Held(self._clock(fate.at), fate.order, "send", node_id, blob), now)
        self._release_wire(out, now)
        in_ms = arriving.fate.delay_ms if arriving and arriving.fate else 0.0
        return kept, (FaultNote(sorted(causes), in_ms, held) if causes else None), lost

    def _lose(self, out: Outcome, src: str, work: _Work, node_id: str, fate: Fate, i: int, now: float) -> None:
        """Copy ``i`` (0: the first) of ``work`` to ``node_id`` was lost on the way: log it, and
        redeliver it when its fate says, or end the run when every copy was lost."""
        packet = work.packet
        self._log(
            out,
            FrameRecord.of(
                n=self.totals.frames, t_ms=self._rel(now), src=src, dst=[node_id], blob=work.blob, received=False,
                status="dropped_fault", header_size=work.header, type=packet.type.value, tag=packet.tag,
                token_used=packet.token_used, fault=FaultNote(["loss"], attempt=i + 1),
            ),
        )  # fmt: skip
        if i + 1 < len(fate.lost):
            due = fate.lost[i + 1]
        elif fate.gave_up:
            plan = self._net.model.plan if self._net.model else None
            self._finish(out, now, "frame_lost",
                         f"every copy of a {packet.type.value} frame to agent {node_id} was lost ({i + 1} in a row; "
                         f"FAULT_LOSS={plan.loss if plan else '?'}, FAULT_MAX_REDELIVERIES="
                         f"{plan.max_redeliveries if plan else '?'})")  # fmt: skip
            return
        else:
            due = fate.sent
        self._hold(out, self._net.later, _Held(self._clock(due), fate.order, "retry", node_id, work.blob, fate, work, i + 1))

    def _retry(self, out: Outcome, held: _Held, now: float) -> None:
        """The next copy of a lost one: lost again, or redelivered (through :meth:`_deliver`,
        like the redelivery of a dead agent's work)."""
        fate, work = held.fate, held.work
        assert fate is not None and work is not None
        if held.node not in self.router.live:
            return  # the agent is gone: lost() handed its work in flight on, rejoin() re-sends the rest
        if held.attempt < len(fate.lost):
            self._lose(out, NETWORK_SRC, work, held.node, fate, held.attempt, now)
            return
        self._net.retrying = fate
        self._deliver(out, NETWORK_SRC, work.blob, work.packet, work.header, [held.node], now, received=False,
                      status="redelivered")  # fmt: skip
        out.notes.append(f"[{self._s(now):7.2f}s] redelivered {work.packet.type.value} to {held.node} (lost on the way)")

    def _take_in(self, out: Outcome, held: _Held, now: float) -> None:
        """A held frame from an agent arrives: the relay receives it now."""
        self._net.arriving = held
        try:
            got = self.receive(held.node, held.blob, now)
        finally:
            self._net.arriving = None
        out.records += got.records
        out.sends += got.sends
        out.notes += got.notes
        out.end = out.end or got.end
        if got.wake_at is not None:
            self._net.wakes.discard(got.wake_at)  # asked again below, for this outcome
            self._wake(out, got.wake_at)

    def _hold(self, out: Outcome, heap: list[_Held], held: _Held, now: float | None = None) -> None:
        heapq.heappush(heap, held)
        if now is None or held.due > now + EPS:  # a copy due now goes out with this outcome
            self._wake(out, held.due)

    def _wake(self, out: Outcome, due: float) -> None:
        """Ask the transport for a tick at ``due``, unless one comes by then (that tick asks for
        the next). An outcome carries one: a later one it replaces is forgotten."""
        net = self._net
        if any(w <= due for w in net.wakes) or (out.wake_at is not None and out.wake_at <= due):
            return
        if out.wake_at is not None:
            net.wakes.discard(out.wake_at)
        out.wake_at = due
        net.wakes.add(due)

    def _release_wire(self, out: Outcome, now: float) -> None:
        wire = self._net.wire
        while wire and wire[0].due <= now + EPS:
            held = heapq.heappop(wire)
            out.sends.append(Send((held.node,), held.blob))

    def _release(self, out: Outcome, now: float) -> None:
        """Carry out what the links held until ``now``, in the order it arrives."""
        net = self._net
        net.wakes = {w for w in net.wakes if w > now + EPS}
        while self.end is None:
            heap = min((h for h in (net.wire, net.later) if h), key=lambda h: h[0], default=None)
            if heap is None or heap[0].due > now + EPS:
                break
            held = heapq.heappop(heap)
            if held.kind == "send":
                out.sends.append(Send((held.node,), held.blob))
            elif held.kind == "arrive":
                self._take_in(out, held, now)
            else:
                self._retry(out, held, now)
        pending = [h[0].due for h in (net.wire, net.later) if h]
        if pending and self.end is None:
            self._wake(out, min(pending))

    def _let_go(self, out: Outcome, now: float) -> None:
        """The run is over: copies still on their way go out now, agents' frames still on theirs
        are logged as refused (as any frame after the end), lost copies are not redelivered."""
        net = self._net
        for held in sorted(net.wire):
            out.sends.append(Send((held.node,), held.blob))
        for held in sorted(net.later):
            if held.kind == "arrive":
                ms = held.fate.delay_ms if held.fate else 0.0
                self._reject(out, held.node, held.blob, now,
                             f"run {self.run_id} already ended ({self.end.status if self.end else '?'}) while "
                             f"network faults held this frame ({ms:.0f} ms)")  # fmt: skip
        net.wire.clear()
        net.later.clear()
