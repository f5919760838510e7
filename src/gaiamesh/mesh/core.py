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

import time
from collections.abc import Callable, Iterable, Mapping, Sequence

from ..errors import RunStatus, run_status
from .books import Books
from .faults import FaultModel
from .frames import (
    FINAL_ANSWER_TAG,
    NETWORK_SRC,
    DataEventPacket,
    ErrorPacket,
    FrameError,
    Packet,
    PacketType,
    ResultPacket,
    SubTaskPacket,
    Turn,
    doc_init,
)
from .links import Links
from .outcome import Outcome, RunEnd, Send, Work
from .protocols import ProtocolAdapter
from .records import AgentMetrics, FrameRecord, FrameStatus, MemberChange
from .routing import Router, RoutingMode
from .subtasks import Assigned, SubTasks, failed_result

SUBTASK = PacketType.SUBTASK.value
QUEUED = frozenset({PacketType.SUBTASK.value, PacketType.RESULT.value})


class RelayCore(Books):
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
        self._waiting: dict[str, tuple[float, list[Work]]] = {}  # tool -> (deadline, pending work)
        self.run_id = run_id
        self.adapter = adapter
        self.max_frame_bytes = max_frame_bytes
        self.router = Router(mode, lineup, topics, share_start)
        super().__init__(lineup, origin)
        self.end: RunEnd | None = None
        self.final: DataEventPacket | None = None
        self._in_flight: dict[str, Work] = {}  # pipeline work, one per agent
        self._tools_done: set[str] = set()
        self._init: Work | None = None  # doc_init, for an agent that comes back mid-run
        self._subtasks = SubTasks()  # the orchestrators' sub-tasks: who sent each, who works on it
        self._seq = 0  # sequence numbers of the relay's own packets (doc_init is 0)
        self.links = Links(self, faults)  # what the network fault model holds (nothing without faults)

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
        self._init = Work(blob, packet, header)
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

    def tick(self, now: float) -> Outcome:
        """Time passed: a tool that waited ``rejoin_grace`` for an agent in vain ends the run."""
        out = Outcome()
        if self.end is not None:
            return out
        self.links.release(out, now)  # network faults: what the links held until now
        for tool, (deadline, _) in list(self._waiting.items()):
            if now >= deadline:
                self._finish(out, now, RunStatus.AGENT_DEAD,
                             f"no {tool!r} agent is alive and none came back within "
                             f"REJOIN_GRACE={self.rejoin_grace:.0f}s")  # fmt: skip
                break
        return out

    def receive(self, src: str, blob: bytes, now: float) -> Outcome:
        """One frame from agent ``src``: validate, route, count, detect the final answer."""
        if (held := self.links.hold_arrival(src, blob, now)) is not None:
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
            self._subtasks.owners[packet.payload.sub_task_id] = src
            dst = self._pick_worker(packet, ())
            self._deliver(out, src, blob, packet, header, dst, now, received=True, decode_us=decode_us)
            if not dst:
                role = packet.payload.assigned_agent_role
                self._fail_subtask(out, packet, f"no live {role!r} agent in this run", now)
            return out
        if isinstance(packet, ResultPacket):
            self._subtasks.assigned.pop(packet.payload.sub_task_id, None)
            owner = self._subtasks.owners.get(packet.payload.sub_task_id)
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
                pending.append(Work(blob, packet, header))  # for the first of its agents to return
        if isinstance(packet, DataEventPacket) and packet.tag == FINAL_ANSWER_TAG and self.final is None:
            self.final = packet
            self._finish(out, now, RunStatus.OK)
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
            for task_id, assigned in self._subtasks.of_worker(node_id):
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
                RunStatus.AGENT_DEAD,
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
        self._finish(out, now, RunStatus.TIMEOUT, f"no final answer within RUN_TIMEOUT={timeout:g}s")
        return out

    def fail(self, status: RunStatus, error: str, now: float) -> Outcome:
        """The run cannot go on (e.g. an agent unreachable at connect time)."""
        out = Outcome()
        self._finish(out, now, status, error)
        return out

    # --- queues -----------------------------------------------------------------------------
    def _pick_worker(self, packet: SubTaskPacket, exclude: Iterable[str]) -> list[str]:
        task, skip = packet.payload, [packet.src, *exclude]
        chosen = task.assigned_agent_id
        if chosen is not None and chosen not in skip and chosen in self.router.members(task.assigned_agent_role):
            return [chosen]  # the sender's choice, live and of the role
        return self.router.pick(task.assigned_agent_role, skip)

    def _reassign(self, out: Outcome, task_id: str, assigned: Assigned, now: float) -> None:
        work = assigned.work
        assert isinstance(work.packet, SubTaskPacket)
        del self._subtasks.assigned[task_id]
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
        result = failed_result(self.run_id, self._seq, packet, message)
        blob = self.adapter.encode(result.to_dict())
        owner = self._subtasks.owners.get(task.sub_task_id, packet.src)
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
        self._subtasks.check(src, packet)
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
                self._subtasks.assigned[packet.payload.sub_task_id] = Assigned(node_id, Work(blob, packet, header))
        elif ptype not in QUEUED:
            consumes = self.router.consumes
            for node_id in dst:
                if consumes(node_id, ptype):  # work to redeliver if it dies (not what it only reads)
                    self._in_flight[node_id] = Work(blob, packet, header)
        dst, fault, lost = self.links.impose(out, blob, dst, now)  # network faults: copies held, lost
        self._log(
            out,
            FrameRecord.of(
                n=self.totals.frames, t_ms=self._rel(now), src=src, dst=dst, blob=blob, received=received,
                status=status, header_size=header, type=ptype, tag=packet.tag,
                token_used=packet.token_used, seq=packet.seq if received else None, decode_us=decode_us,
                fault=fault,
            ),
        )  # fmt: skip
        if dst and self.links.model is None:
            out.sends.append(Send(tuple(dst), blob))
        for node_id, fate in lost:
            self.links.lose(out, src, Work(blob, packet, header), node_id, fate, 0, now)

    def _finish(self, out: Outcome, now: float, status: RunStatus, error: str | None = None) -> None:
        if self.end is not None:
            return
        self.end = RunEnd(status, error)
        self.done_at = now
        out.end = self.end
        self.links.let_go(out, now)
        out.notes.append(f"[{self._s(now):7.2f}s] run ends: {status}" + (f" ({error})" if error else ""))
