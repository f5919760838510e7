"""The links of a run under network faults (``FAULT_*``): what they hold, and when it falls due.

``faults.py`` decides each crossing (delay, loss, a partition); :class:`Links` holds each copy to
an agent and each frame from one until it is due, and asks the transport for a tick when
something falls due. It decides nothing of the run and calls nothing of the core: the core takes
what falls due from :meth:`Links.next_due` as plain values (a copy to send, :class:`Send`; a frame
from an agent that arrives now, :class:`Arrival`; the next copy of a lost one, :class:`Retry`) and
acts on each. A run without faults has no model here, and nothing is held.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from .books import RunClock
from .faults import Fate, FaultModel
from .frames import NETWORK_SRC
from .outcome import Outcome, Send, Work
from .records import FaultNote

EPS = 0.001  # seconds: a tick releases what is due this close (a timer may fire a hair early)


@dataclass(frozen=True)
class Arrival:
    """A frame from agent ``node`` that its link delivers now; ``fate``: how it crossed."""

    node: str
    blob: bytes
    fate: Fate


@dataclass(frozen=True)
class Retry:
    """The next copy of ``work`` to ``node``, whose earlier copies were lost on the way (its
    ``attempt``-th: 1 is the first redelivery); ``fate``: the crossing that lost them."""

    node: str
    work: Work
    fate: Fate
    attempt: int


Due = Send | Arrival | Retry


@dataclass(order=True)
class Held:
    """What the links hold until ``due`` (the relay's clock)."""

    due: float
    order: int  # of two due at once, the one the model decided first goes first
    what: Due = field(compare=False)


@dataclass
class Crossing:
    """A frame's copies as the links take them: the agents they go to (``dst`` without the lost
    ones), the frame's :class:`FaultNote`, and the lost copies (logged apart, and redelivered)."""

    dst: list[str]
    note: FaultNote | None = None
    lost: list[tuple[str, Fate]] = field(default_factory=list)


@dataclass
class Links:
    """The core's side of the network fault model: what the links hold, the ticks it asked for."""

    model: FaultModel | None
    clock: RunClock
    wire: list[Held] = field(default_factory=list)  # copies to agents: a heap by (due, order)
    later: list[Held] = field(default_factory=list)  # arrivals and redeliveries: a heap
    wakes: set[float] = field(default_factory=set)  # ticks asked of the transport, still to come

    def hold_in(self, out: Outcome, src: str, blob: bytes, now: float) -> bool:
        """A frame from ``src`` goes in line on its link: :meth:`next_due` hands it back when it
        arrives (False: no faults, it is taken in at once)."""
        if self.model is None:
            return False
        fate = self.model.decide(src, NETWORK_SRC, self.clock.run_s(now))
        self.hold(out, self.later, Held(self.clock.clock_of(fate.at), fate.order, Arrival(src, blob, fate)), now)
        return True

    def impose(
        self, out: Outcome, blob: bytes, dst: list[str], now: float, arrived: Fate | None, retry: Fate | None
    ) -> Crossing:
        """Each copy's fate (``arrived``: how the frame came in, when it was held on its way;
        ``retry``: the fate of a lost copy redelivered now, which holds for it). The copies that
        go are held until they arrive; whatever is due goes out now, in order."""
        if self.model is None:
            return Crossing(dst)
        causes: set[str] = set(arrived.causes) if arrived else set()
        held: dict[str, float] = {}
        crossing = Crossing([])
        for node_id in dst:
            fate = retry or self.model.decide(NETWORK_SRC, node_id, self.clock.run_s(now))
            if fate.lost and retry is None:
                crossing.lost.append((node_id, fate))
                continue
            crossing.dst.append(node_id)
            causes.update(fate.causes)
            if fate.delay_ms > 0:
                held[node_id] = fate.delay_ms
            self.hold(out, self.wire, Held(self.clock.clock_of(fate.at), fate.order, Send((node_id,), blob)), now)
        self.release_wire(out, now)
        in_ms = arrived.delay_ms if arrived else 0.0
        crossing.note = FaultNote(sorted(causes), in_ms, held) if causes else None
        return crossing

    def retry_later(self, out: Outcome, node_id: str, work: Work, fate: Fate, i: int) -> str | None:
        """Copy ``i`` (0: the first) of ``work`` to ``node_id`` was lost: hold the next for when
        its fate says, or return why the run ends when every copy was lost."""
        if i + 1 < len(fate.lost):
            due = fate.lost[i + 1]
        elif fate.gave_up:
            plan = self.model.plan if self.model else None
            return (f"every copy of a {work.packet.type.value} frame to agent {node_id} was lost ({i + 1} in a row; "
                    f"FAULT_LOSS={plan.loss if plan else '?'}, FAULT_MAX_REDELIVERIES="
                    f"{plan.max_redeliveries if plan else '?'})")  # fmt: skip
        else:
            due = fate.sent
        self.hold(out, self.later, Held(self.clock.clock_of(due), fate.order, Retry(node_id, work, fate, i + 1)))
        return None

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

    def rewake(self, out: Outcome, due: float) -> None:
        """A tick asked for in an outcome folded into ``out``: ``out`` asks for it now."""
        self.wakes.discard(due)
        self.wake(out, due)

    def release_wire(self, out: Outcome, now: float) -> None:
        wire = self.wire
        while wire and wire[0].due <= now + EPS:
            what = heapq.heappop(wire).what
            assert isinstance(what, Send)
            out.sends.append(what)

    def ticked(self, now: float) -> None:
        """The transport's tick at ``now`` came: the ticks asked for until then are spent."""
        self.wakes = {w for w in self.wakes if w > now + EPS}

    def next_due(self, now: float) -> Due | None:
        """The next thing the links held that is due by ``now``, in the order it arrives (None: nothing)."""
        heap = min((h for h in (self.wire, self.later) if h), key=lambda h: h[0], default=None)
        if heap is None or heap[0].due > now + EPS:
            return None
        return heapq.heappop(heap).what

    def wake_next(self, out: Outcome) -> None:
        """Ask for a tick when the next thing held falls due."""
        pending = [h[0].due for h in (self.wire, self.later) if h]
        if pending:
            self.wake(out, min(pending))

    def let_go(self) -> tuple[list[Send], list[Arrival]]:
        """The run is over: the copies still on their way (they go out now), and the agents'
        frames still on theirs (refused, as any frame after the end); lost copies are not redelivered."""
        sends = [held.what for held in sorted(self.wire) if isinstance(held.what, Send)]
        arrivals = [held.what for held in sorted(self.later) if isinstance(held.what, Arrival)]
        self.wire.clear()
        self.later.clear()
        return sends, arrivals
