"""``RelayCore``: every decision and every count of one run, with no I/O and no asyncio.

The transport (``relay.py``) feeds it events, each with the time it happened:
``start`` (t=0, the document), ``receive`` (a frame from an agent), ``lost`` (an agent's
connection closed), ``rejoin`` (it answered again), ``join`` (a replica found by DNS mid-run),
``leave`` (a lost replica whose address left DNS), ``tick`` (a time it asked for came),
``expire`` (the run timeout) and ``fail``; each returns an :class:`Outcome`: the frame records to
log, the bytes to send to whom, progress lines, and the end of the run when it ended. Validation,
routing, redelivery to a same-tool replica, accounting and final-answer detection all live here
and in the layers below (``membership.py``: the line-up's changes; ``delivery.py``: delivery,
sub-tasks, the end; ``books.py``: the counters and the clock), so they are tested with plain calls.

Under network faults the links (``links.py``) hold what crosses them; the core takes what falls
due from them (:meth:`RelayCore._release`) and acts on it: a frame from an agent enters the core
once, when its link delivers it.

Counters change only in :meth:`_log`, which folds each frame record into the totals with
the same :meth:`Totals.add` that ``gaiamesh audit`` uses on ``frames.jsonl``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence

from ..errors import RunStatus, run_status
from .faults import Fate, FaultModel
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
from .links import Arrival
from .membership import Membership
from .outcome import Outcome, Send, Work
from .protocols import ProtocolAdapter
from .routing import Router, RoutingMode


class RelayCore(Membership):
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
        router = Router(mode, lineup, topics, share_start)
        super().__init__(run_id, adapter, router, lineup, origin, faults, rejoin_grace, sources)
        # Times the decoding of each frame that comes in (the protocol's cost per message);
        # every other time comes in with the event.
        self.clock = clock
        self.max_frame_bytes = max_frame_bytes
        self.final: DataEventPacket | None = None

    # --- events ---------------------------------------------------------------------------
    def start(
        self, doc: str, question: str, chunk_size: int, now: float, history: Sequence[Turn] = ()
    ) -> Outcome:
        """t=0, ``broadcast_init``: the document in chunks, the question and the conversation's
        earlier turns to the agents."""
        self.run_clock.t0 = now
        out = Outcome()
        packet = doc_init(self.run_id, doc, question, chunk_size, list(history))
        blob = self.adapter.encode(packet.to_dict())
        header = self.adapter.header_bytes(blob, packet)
        dst = self.router.destinations(packet.type.value, NETWORK_SRC)
        self._init = Work(blob, packet, header)
        self._deliver(out, NETWORK_SRC, blob, packet, header, dst, now, received=False)
        return out

    def tick(self, now: float) -> Outcome:
        """Time passed: what the links held until now falls due; a tool that waited
        ``rejoin_grace`` for an agent in vain ends the run."""
        out = Outcome()
        if self.end is not None:
            return out
        self._release(out, now)  # network faults: what the links held until now
        for tool, (deadline, _) in list(self._waiting.items()):
            if now >= deadline:
                self._finish(out, now, RunStatus.AGENT_DEAD,
                             f"no {tool!r} agent is alive and none came back within "
                             f"REJOIN_GRACE={self.rejoin_grace:.0f}s")  # fmt: skip
                break
        return out

    def receive(self, src: str, blob: bytes, now: float) -> Outcome:
        """One frame from agent ``src``: taken in now, or, under network faults, when its link
        delivers it (then whatever else is due by now comes first)."""
        out = Outcome()
        if self.end is None and self.links.hold_in(out, src, blob, now):
            self._release(out, now)
        else:
            self._take_in(out, src, blob, now)
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

    # --- network faults: what falls due -----------------------------------------------------
    def _release(self, out: Outcome, now: float) -> None:
        """Carry out what the links held until ``now``, in the order it arrives."""
        self.links.ticked(now)
        while self.end is None and (due := self.links.next_due(now)) is not None:
            if isinstance(due, Send):
                out.sends.append(due)
            elif isinstance(due, Arrival):
                self._arrive(out, due, now)
            else:
                self._retry(out, due, now)
        if self.end is None:
            self.links.wake_next(out)

    def _arrive(self, out: Outcome, arrival: Arrival, now: float) -> None:
        """A frame its link held arrives: it is taken in now, and what that did joins ``out``."""
        got = Outcome()
        self._take_in(got, arrival.node, arrival.blob, now, arrival.fate)
        out.records += got.records
        out.sends += got.sends
        out.notes += got.notes
        out.end = out.end or got.end
        if got.wake_at is not None:
            self.links.rewake(out, got.wake_at)

    # --- a frame in -------------------------------------------------------------------------
    def _take_in(self, out: Outcome, src: str, blob: bytes, now: float, arrived: Fate | None = None) -> None:
        """A frame from ``src`` arrives: validate, route, count, detect the final answer
        (``arrived``: how it crossed its link, when the links held it)."""
        if self.end is not None:
            # The run is over: the frame is still on the books, but nobody receives it.
            self._reject(out, src, blob, now, f"run {self.run_id} already ended ({self.end.status})")
            return
        started = self.clock()
        try:
            packet = self._validate(src, blob)
        except FrameError as exc:
            self._reject(out, src, blob, now, str(exc), (self.clock() - started) * 1e6)
            return
        decode_us = (self.clock() - started) * 1e6
        header = self.adapter.header_bytes(blob, packet)

        def deliver(dst: list[str]) -> None:
            self._deliver(out, src, blob, packet, header, dst, now, received=True, decode_us=decode_us,
                          arrived=arrived)  # fmt: skip

        if isinstance(packet, SubTaskPacket):
            # An orchestrator handing out sub-tasks is still working on its doc_init.
            self._subtasks.owners[packet.payload.sub_task_id] = src
            dst = self._pick_worker(packet, ())
            deliver(dst)
            if not dst:
                role = packet.payload.assigned_agent_role
                self._fail_subtask(out, packet, f"no live {role!r} agent in this run", now)
            return
        if isinstance(packet, ResultPacket):
            self._subtasks.assigned.pop(packet.payload.sub_task_id, None)
            owner = self._subtasks.owners.get(packet.payload.sub_task_id)
            deliver([owner] if owner in self.router.live else self.router.subscribers(packet.type.value, src))
            return
        self._in_flight.pop(src, None)  # the agent answered: its work is no longer in flight
        if isinstance(packet, ErrorPacket):
            deliver([])
            message = f"agent {src} ({self.router.tool_of(src)}) failed: {packet.payload.error}"
            self.agents[src].note = message
            out.notes.append(f"[{self._s(now):7.2f}s] {message}")
            self._finish(out, now, run_status(packet.payload.as_error(message)), message)
            return
        self._tools_done.add(self.router.tool_of(src))
        deliver(self.router.destinations(packet.type.value, src))
        for tool, (_, pending) in self._waiting.items():
            if self.router.tool_consumes(tool, packet.type.value):
                pending.append(Work(blob, packet, header))  # for the first of its agents to return
        if isinstance(packet, DataEventPacket) and packet.tag == FINAL_ANSWER_TAG and self.final is None:
            self.final = packet
            self._finish(out, now, RunStatus.OK)

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
