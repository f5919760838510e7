"""The coordinator's decisions, without I/O: which worker takes which item, and each item's
fate. The transport calls it with what happened (an item read, an answer, a failure, a worker
lost or back) and the time, and sends what :meth:`Dispatcher.assign` returns.

- **dynamic** (ProtocolBench's coordinator): an item goes to the free worker with the fewest
  items in flight, the one idle longest first; **round-robin**: to the next worker in turn,
  waiting for it when it is full (so a slow worker holds the line, as round-robin does).
- At most ``per_worker`` items in flight on a worker, and the queue takes at most
  ``prefetch`` items ahead of them: a file of any length is read as the workers free up.
- Each item is answered once: the first answer is its answer; any later one (a worker that was
  given up on answers after all), or one after the item ended ``failed``, is counted as a
  duplicate, never taken. An item
  whose worker is lost or fails goes back to the head of the queue, to another worker, up to
  ``max_attempts`` sends; then it ends ``failed`` with the reason.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from ..errors import ConfigError
from .items import StreamItem

Policy = Literal["dynamic", "round-robin"]
POLICIES: tuple[Policy, ...] = ("dynamic", "round-robin")
TOLD = ("answered", "empty", "failed")  # an item's fate once it has one


@dataclass
class Attempt:
    """One send of an item to a worker, and how it ended (None: still in flight)."""

    worker: str
    sent_s: float
    ended_s: float | None = None
    outcome: Literal["answered", "failed", "lost", "duplicate"] | None = None
    why: str = ""
    late: bool = False  # not a send: the answer of a worker given up on, recorded when it came


@dataclass
class Fate:
    """What became of one item: when it was queued, every send, its one answer."""

    item: StreamItem
    queued_s: float
    attempts: list[Attempt] = field(default_factory=list)
    # ``empty``: a worker answered with no text; told like an answer, counted apart from one
    status: Literal["queued", "in_flight", "answered", "empty", "failed"] = "queued"
    prediction: str | None = None
    answered_by: str | None = None
    answered_s: float | None = None
    why: str = ""

    @property
    def duplicates(self) -> int:
        return sum(a.outcome == "duplicate" for a in self.attempts)

    @property
    def sends(self) -> list[Attempt]:
        return [a for a in self.attempts if not a.late]


@dataclass
class _Worker:
    name: str
    in_flight: set[str] = field(default_factory=set)
    idle_since: float = 0.0
    alive: bool = True


class Dispatcher:
    """The queue, the workers and every item's fate (see the module's docstring)."""

    def __init__(self, workers: Sequence[str], policy: Policy = "dynamic", per_worker: int = 1,
                 prefetch: int = 0, max_attempts: int = 3) -> None:  # fmt: skip
        if not workers or len(set(workers)) != len(workers):
            raise ConfigError(f"a stream needs one or more workers, each named once (got {list(workers)})")
        if policy not in POLICIES:
            raise ConfigError(f"dispatch policy {policy!r}: one of {', '.join(POLICIES)}")
        if per_worker < 1 or max_attempts < 1 or prefetch < 0:
            raise ConfigError("per_worker and max_attempts are at least 1, prefetch at least 0")
        self.policy, self.per_worker, self.max_attempts = policy, per_worker, max_attempts
        self.prefetch = prefetch or len(workers) * per_worker
        self.workers = {w: _Worker(w) for w in workers}
        self.order = list(workers)
        self._turn = 0
        self.queue: deque[str] = deque()
        self.fates: dict[str, Fate] = {}

    # --- what the transport tells it ------------------------------------------------------------
    @property
    def wants(self) -> int:
        """How many more items the queue takes now (read no further ahead than this)."""
        return max(0, self.prefetch - len(self.queue))

    def add(self, item: StreamItem, now: float) -> None:
        if item.id in self.fates:
            raise ConfigError(f"item {item.id!r} was added twice")
        self.fates[item.id] = Fate(item, now)
        self.queue.append(item.id)

    def answered(self, item_id: str, worker: str, now: float, prediction: str) -> bool:
        """A worker's answer; True when it is the item's answer, False for a duplicate."""
        fate, attempt = self._ended(item_id, worker, now)
        if fate.status in TOLD:  # its fate is told: a later answer is not taken
            attempt.outcome = "duplicate"
            return False
        attempt.outcome = "answered"
        status: Literal["answered", "empty"] = "answered" if prediction.strip() else "empty"
        fate.status, fate.prediction, fate.answered_by, fate.answered_s = status, prediction, worker, now
        if item_id in self.queue:  # answered by a worker given up on, before another took it
            self.queue.remove(item_id)
        return True

    def failed(self, item_id: str, worker: str, now: float, why: str) -> None:
        """The worker could not answer the item: to another worker, or ``failed`` at the last send."""
        fate, attempt = self._ended(item_id, worker, now)
        attempt.outcome, attempt.why = "failed", why
        self._again(fate, why)

    def lost(self, worker: str, now: float) -> list[str]:
        """The worker is gone (it died, or its connection did): its items go to the others."""
        w = self.workers[worker]
        w.alive = False
        back = sorted(w.in_flight)
        for item_id in back:
            fate, attempt = self._ended(item_id, worker, now)
            attempt.outcome, attempt.why = "lost", f"worker {worker} was lost"
            self._again(fate, attempt.why)
        return back

    def moved(self, item_id: str, worker: str, to: str, now: float) -> None:
        """The wire handed the item on from ``worker`` to ``to`` (the relay's queue does when
        the chosen worker is lost): that send ends ``lost``, one to ``to`` begins. ``worker``
        stays in the line: the relay knows who is live and hands on what a lost worker is sent,
        and a worker that comes back (a storm restarts it) takes work again at once. (Marking it
        gone here would be for good: nothing tells the coordinator of a return.)"""
        fate, attempt = self._ended(item_id, worker, now)
        attempt.outcome, attempt.why = "lost", f"worker {worker} was lost; the relay handed the item to {to}"
        if fate.status == "in_flight":
            fate.attempts.append(Attempt(to, now))
            self.workers[to].in_flight.add(item_id)

    def back(self, worker: str, now: float) -> None:
        w = self.workers[worker]
        w.alive, w.idle_since = True, now

    # --- what it decides ------------------------------------------------------------------------
    def assign(self, now: float) -> list[tuple[StreamItem, str]]:
        """The sends to make now: (item, worker), in order."""
        return self._assign_dynamic(now) if self.policy == "dynamic" else self._assign_in_turn(now)

    def _assign_dynamic(self, now: float) -> list[tuple[StreamItem, str]]:
        """Each queued item, in order, to the free worker with the fewest items in flight (the one
        idle longest first). An item sent again goes to a worker that has not had it while one
        such worker is live: it waits for a busy one rather than go back to the worker that just
        failed it; the next items are sent meanwhile."""
        sends: list[tuple[StreamItem, str]] = []
        for item_id in list(self.queue):
            worker = self._free_worker({a.worker for a in self.fates[item_id].sends})
            if worker is None:
                if not any(len(w.in_flight) < self.per_worker for w in self.workers.values() if w.alive):
                    break  # nobody is free: the rest wait too
                continue
            self.queue.remove(item_id)
            sends.append(self._send(item_id, worker, now))
        return sends

    def _assign_in_turn(self, now: float) -> list[tuple[StreamItem, str]]:
        """Round-robin: the head of the queue to the next live worker in turn, waiting for it."""
        sends: list[tuple[StreamItem, str]] = []
        while self.queue:
            worker = self._next_in_turn()
            if worker is None:
                break
            sends.append(self._send(self.queue.popleft(), worker, now))
        return sends

    def _send(self, item_id: str, worker: _Worker, now: float) -> tuple[StreamItem, str]:
        fate = self.fates[item_id]
        fate.attempts.append(Attempt(worker.name, now))
        fate.status = "in_flight"
        worker.in_flight.add(item_id)
        return fate.item, worker.name

    def _free_worker(self, had: set[str]) -> _Worker | None:
        live = [self.workers[n] for n in self.order if self.workers[n].alive]
        fresh = [w for w in live if w.name not in had]
        free = [w for w in (fresh or live) if len(w.in_flight) < self.per_worker]
        return min(free, key=lambda w: (len(w.in_flight), w.idle_since, self.order.index(w.name)), default=None)

    @property
    def idle(self) -> bool:
        """Nothing queued and nothing in flight."""
        return not self.queue and not any(w.in_flight for w in self.workers.values())

    def _next_in_turn(self) -> _Worker | None:
        for _ in range(len(self.order)):  # the next live worker in turn, full or not
            w = self.workers[self.order[self._turn % len(self.order)]]
            if w.alive:
                if len(w.in_flight) >= self.per_worker:
                    return None  # its turn: the line waits for it
                self._turn += 1
                return w
            self._turn += 1
        return None

    def _ended(self, item_id: str, worker: str, now: float) -> tuple[Fate, Attempt]:
        fate = self.fates.get(item_id)
        if fate is None:
            raise ConfigError(f"worker {worker} answered item {item_id!r}, which this stream never sent")
        attempt = next((a for a in reversed(fate.attempts) if a.worker == worker and a.ended_s is None), None)
        if attempt is None:  # an answer after the worker was given up on: recorded, never lost
            attempt = Attempt(worker, now, late=True)
            fate.attempts.append(attempt)
        attempt.ended_s = now
        w = self.workers[worker]
        if item_id in w.in_flight:
            w.in_flight.discard(item_id)
            w.idle_since = now
        return fate, attempt

    def _again(self, fate: Fate, why: str) -> None:
        if fate.status in ("answered", "empty"):
            return
        if len(fate.sends) >= self.max_attempts:
            fate.status, fate.why = "failed", f"{why} (send {len(fate.sends)} of {self.max_attempts})"
        elif fate.item.id not in self.queue:
            fate.status = "queued"
            self.queue.appendleft(fate.item.id)  # it has waited longest
