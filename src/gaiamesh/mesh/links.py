"""The links of a run under network faults (``FAULT_*``): what they hold, and when it arrives.

``faults.py`` decides each crossing (delay, loss, a partition); :class:`Links` holds each copy to
an agent and each frame from one until it is due, logs a lost copy and redelivers it by its fate,
and asks the transport for a tick when something falls due. It acts through the relay core
(:class:`Core`: receive a frame, deliver, log, end the run), which makes every other decision. A
run without faults has no model here, and nothing is held.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Literal, Protocol

from ..errors import RunStatus
from .faults import Fate, FaultModel
from .frames import NETWORK_SRC, Packet
from .outcome import Outcome, RunEnd, Send, Work
from .records import FaultNote, FrameRecord, FrameStatus, Totals
from .routing import Router

EPS = 0.001  # seconds: a tick releases what is due this close (a timer may fire a hair early)


@dataclass(order=True)
class Held:
    """What the network fault model holds until ``due`` (the relay's clock): a copy on its way to
    agent ``node`` (``send``), a frame from ``node`` on its way in (``arrive``), or the next copy
    of a lost one to ``node`` (``retry``, its ``attempt``-th: 1 is the first redelivery)."""

    due: float
    order: int  # of two due at once, the one the model decided first goes first
    kind: Literal["send", "arrive", "retry"] = field(compare=False)
    node: str = field(compare=False)
    blob: bytes = field(compare=False)
    fate: Fate | None = field(default=None, compare=False)
    work: Work | None = field(default=None, compare=False)
    attempt: int = field(default=0, compare=False)


class Core(Protocol):
    """What the links need of the relay core."""

    end: RunEnd | None
    run_id: str
    router: Router
    totals: Totals

    def receive(self, src: str, blob: bytes, now: float) -> Outcome: ...
    def _deliver(self, out: Outcome, src: str, blob: bytes, packet: Packet, header: int, dst: list[str], now: float,
                 received: bool, status: FrameStatus = "accepted", decode_us: float | None = None) -> None: ...  # fmt: skip
    def _log(self, out: Outcome, record: FrameRecord) -> None: ...
    def _reject(self, out: Outcome, src: str, blob: bytes, now: float, error: str, decode_us: float | None = None) -> None: ...
    def _finish(self, out: Outcome, now: float, status: RunStatus, error: str | None = None) -> None: ...
    def _rel(self, now: float) -> float: ...
    def _s(self, now: float) -> float: ...
    def _run_s(self, now: float) -> float: ...
    def _clock(self, t: float) -> float: ...


@dataclass
class Links:
    """The core's side of the network fault model: what the links hold, the ticks it asked for."""

    core: Core
    model: FaultModel | None
    wire: list[Held] = field(default_factory=list)  # copies to agents: a heap by (due, order)
    later: list[Held] = field(default_factory=list)  # arrivals and redeliveries: a heap
    wakes: set[float] = field(default_factory=set)  # ticks asked of the transport, still to come
    arriving: Held | None = None  # the held frame being taken in now
    retrying: Fate | None = None  # the fate of the redelivery being made now

    def hold_arrival(self, src: str, blob: bytes, now: float) -> Outcome | None:
        """A frame from ``src`` goes in line on its link; whatever has arrived by ``now`` is taken
        in, in order (None: no faults, or this is a held frame being taken in)."""
        if self.model is None or self.arriving is not None or self.core.end is not None:
            return None
        fate = self.model.decide(src, NETWORK_SRC, self.core._run_s(now))
        out = Outcome()
        self.hold(out, self.later, Held(self.core._clock(fate.at), fate.order, "arrive", src, blob, fate), now)
        self.release(out, now)
        return out

    def impose(
        self, out: Outcome, blob: bytes, dst: list[str], now: float
    ) -> tuple[list[str], FaultNote | None, list[tuple[str, Fate]]]:
        """Each copy's fate: ``dst`` without the lost copies, the frame's :class:`FaultNote`, and
        the lost copies (logged apart, and redelivered). The copies that go are held until they
        arrive; whatever is due goes out now, in order."""
        if self.model is None:
            return dst, None, []
        arriving, self.arriving = self.arriving, None  # the hold on the way in is this frame's only
        retrying, self.retrying = self.retrying, None
        causes: set[str] = set(arriving.fate.causes) if arriving and arriving.fate else set()
        held: dict[str, float] = {}
        kept: list[str] = []
        lost: list[tuple[str, Fate]] = []
        for node_id in dst:
            fate = retrying or self.model.decide(NETWORK_SRC, node_id, self.core._run_s(now))
            if fate.lost and retrying is None:
                lost.append((node_id, fate))
                continue
            kept.append(node_id)
            causes.update(fate.causes)
            if fate.delay_ms > 0:
                held[node_id] = fate.delay_ms
            self.hold(out, self.wire, Held(self.core._clock(fate.at), fate.order, "send", node_id, blob), now)
        self.release_wire(out, now)
        in_ms = arriving.fate.delay_ms if arriving and arriving.fate else 0.0
        return kept, (FaultNote(sorted(causes), in_ms, held) if causes else None), lost

    def lose(self, out: Outcome, src: str, work: Work, node_id: str, fate: Fate, i: int, now: float) -> None:
        """Copy ``i`` (0: the first) of ``work`` to ``node_id`` was lost on the way: log it, and
        redeliver it when its fate says, or end the run when every copy was lost."""
        packet = work.packet
        self.core._log(
            out,
            FrameRecord.of(
                n=self.core.totals.frames, t_ms=self.core._rel(now), src=src, dst=[node_id], blob=work.blob, received=False,
                status="dropped_fault", header_size=work.header, type=packet.type.value, tag=packet.tag,
                token_used=packet.token_used, fault=FaultNote(["loss"], attempt=i + 1),
            ),
        )  # fmt: skip
        if i + 1 < len(fate.lost):
            due = fate.lost[i + 1]
        elif fate.gave_up:
            plan = self.model.plan if self.model else None
            self.core._finish(out, now, RunStatus.FRAME_LOST,
                         f"every copy of a {packet.type.value} frame to agent {node_id} was lost ({i + 1} in a row; "
                         f"FAULT_LOSS={plan.loss if plan else '?'}, FAULT_MAX_REDELIVERIES="
                         f"{plan.max_redeliveries if plan else '?'})")  # fmt: skip
            return
        else:
            due = fate.sent
        self.hold(out, self.later, Held(self.core._clock(due), fate.order, "retry", node_id, work.blob, fate, work, i + 1))

    def retry(self, out: Outcome, held: Held, now: float) -> None:
        """The next copy of a lost one: lost again, or redelivered (through :meth:`_deliver`,
        like the redelivery of a dead agent's work)."""
        fate, work = held.fate, held.work
        assert fate is not None and work is not None
        if held.node not in self.core.router.live:
            return  # the agent is gone: lost() handed its work in flight on, rejoin() re-sends the rest
        if held.attempt < len(fate.lost):
            self.lose(out, NETWORK_SRC, work, held.node, fate, held.attempt, now)
            return
        self.retrying = fate
        self.core._deliver(out, NETWORK_SRC, work.blob, work.packet, work.header, [held.node], now, received=False,
                      status="redelivered")  # fmt: skip
        out.notes.append(f"[{self.core._s(now):7.2f}s] redelivered {work.packet.type.value} to {held.node} (lost on the way)")

    def take_in(self, out: Outcome, held: Held, now: float) -> None:
        """A held frame from an agent arrives: the relay receives it now."""
        self.arriving = held
        try:
            got = self.core.receive(held.node, held.blob, now)
        finally:
            self.arriving = None
        out.records += got.records
        out.sends += got.sends
        out.notes += got.notes
        out.end = out.end or got.end
        if got.wake_at is not None:
            self.wakes.discard(got.wake_at)  # asked again below, for this outcome
            self.wake(out, got.wake_at)

    def hold(self, out: Outcome, heap: list[Held], held: Held, now: float | None = None) -> None:
        heapq.heappush(heap, held)
        if now is None or held.due > now + EPS:  # a copy due now goes out with this outcome
            self.wake(out, held.due)

    def wake(self, out: Outcome, due: float) -> None:
        """Ask the transport for a tick at ``due``, unless one comes by then (that tick asks for
        the next). An outcome carries one: a later one it replaces is forgotten."""
        if any(w <= due for w in self.wakes) or (out.wake_at is not None and out.wake_at <= due):
            return
        if out.wake_at is not None:
            self.wakes.discard(out.wake_at)
        out.wake_at = due
        self.wakes.add(due)

    def release_wire(self, out: Outcome, now: float) -> None:
        wire = self.wire
        while wire and wire[0].due <= now + EPS:
            held = heapq.heappop(wire)
            out.sends.append(Send((held.node,), held.blob))

    def release(self, out: Outcome, now: float) -> None:
        """Carry out what the links held until ``now``, in the order it arrives."""
        self.wakes = {w for w in self.wakes if w > now + EPS}
        while self.core.end is None:
            heap = min((h for h in (self.wire, self.later) if h), key=lambda h: h[0], default=None)
            if heap is None or heap[0].due > now + EPS:
                break
            held = heapq.heappop(heap)
            if held.kind == "send":
                out.sends.append(Send((held.node,), held.blob))
            elif held.kind == "arrive":
                self.take_in(out, held, now)
            else:
                self.retry(out, held, now)
        pending = [h[0].due for h in (self.wire, self.later) if h]
        if pending and self.core.end is None:
            self.wake(out, min(pending))

    def let_go(self, out: Outcome, now: float) -> None:
        """The run is over: copies still on their way go out now, agents' frames still on theirs
        are logged as refused (as any frame after the end), lost copies are not redelivered."""
        for held in sorted(self.wire):
            out.sends.append(Send((held.node,), held.blob))
        for held in sorted(self.later):
            if held.kind == "arrive":
                ms = held.fate.delay_ms if held.fate else 0.0
                self.core._reject(out, held.node, held.blob, now,
                             f"run {self.core.run_id} already ended ({self.core.end.status if self.core.end else '?'}) while "
                             f"network faults held this frame ({ms:.0f} ms)")  # fmt: skip
        self.wire.clear()
        self.later.clear()
