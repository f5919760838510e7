"""Network faults the relay imposes on its own links (``FAULT_*``): pure, seeded decisions.

The mesh is a star: a frame crosses its sender's link into the relay, then one link out to each
receiver. :meth:`FaultModel.decide` takes one crossing (``src`` -> ``dst``, one end being the
relay, at ``t`` seconds of the run) and returns its :class:`Fate`: when it reaches the other end,
and whether copies of it were lost on the way. The relay core holds, logs and redelivers by that
fate; nothing here sleeps, sends or reads a clock, so every rule is tested by plain calls.

- **latency** (``FAULT_LATENCY_MS`` ± ``FAULT_JITTER_MS``, uniform, never below 0): on every
  crossing of the links ``FAULT_LINKS`` names (empty: every link), both ways.
- **loss** (``FAULT_LOSS``): a copy the relay sends on such a link is lost with this probability.
  The relay redelivers it ``FAULT_REDELIVER_AFTER`` seconds later, and that copy may be lost
  again; after ``FAULT_MAX_REDELIVERIES`` lost redeliveries it gives up (the run ends
  ``frame_lost``). Frames agents send are never lost: agents do not resend, so a loss there
  could only end as a run that waits for ``RUN_TIMEOUT``, which measures nothing.
- **partition** (``FAULT_PARTITION_AGENT`` from ``FAULT_PARTITION_AT`` for
  ``FAULT_PARTITION_FOR`` seconds of the run): the agent's link carries nothing; whatever would
  arrive in that window, either way, arrives when it ends.
- **slow agent** (``FAULT_SLOW_AGENT``, ``FAULT_SLOW_MS``): that much more on every crossing of
  its link, both ways.

Every link delivers in order, as the TCP under a WebSocket does: a frame never overtakes an
earlier one on the same link (it waits behind it: cause ``queued``). Each link direction draws
from its own generator, seeded by ``FAULT_SEED``, the task and the link, so a run's faults depend
only on the order of the frames on each link, not on how the links interleave: the same task meets
the same faults again (replayed, or under another protocol), and another task other ones.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from ..errors import ConfigError
from ..settings import FaultSettings
from .frames import NETWORK_SRC

Cause = Literal["latency", "slow", "partition", "loss", "queued"]
Action = Literal["deliver", "delay", "hold", "drop"]


@dataclass(frozen=True)
class Partition:
    """``node``'s link is cut from ``start`` to ``end`` (seconds of the run)."""

    node: str
    start: float
    end: float

    def holds(self, node: str, t: float) -> bool:
        return node == self.node and self.start <= t < self.end


@dataclass(frozen=True)
class FaultPlan:
    """What the network does, as configured. An empty plan does nothing."""

    latency_ms: float = 0.0
    jitter_ms: float = 0.0
    links: frozenset[str] = frozenset()  # agents whose links get latency and loss; empty: all
    loss: float = 0.0
    partition: Partition | None = None
    slow_node: str = ""
    slow_ms: float = 0.0
    redeliver_after: float = 0.5
    max_redeliveries: int = 8
    seed: int = 1
    salt: str = ""  # mixed into the seed: the task, so that a batch's tasks do not all meet the same faults

    @property
    def active(self) -> bool:
        return bool(self.latency_ms or self.jitter_ms or self.loss or self.partition or self.slow_ms)

    def on_link(self, node: str) -> bool:
        """Whether latency and loss apply to ``node``'s link."""
        return not self.links or node in self.links

    @classmethod
    def from_settings(cls, s: FaultSettings, nodes: Iterable[str], salt: str = "") -> FaultPlan:
        """The plan ``FAULT_*`` describes for a run of the agents ``nodes`` (on the task ``salt``); raises
        :class:`ConfigError` naming a fault that points at an agent the run does not have."""
        known = set(nodes)
        links = frozenset(n.strip() for n in s.fault_links.split(",") if n.strip())
        named = {"FAULT_LINKS": sorted(links), "FAULT_PARTITION_AGENT": [s.fault_partition_agent],
                 "FAULT_SLOW_AGENT": [s.fault_slow_agent]}  # fmt: skip
        for name, ids in named.items():
            unknown = [n for n in ids if n and n not in known]
            if unknown:
                raise ConfigError(f"{name} names agent(s) {', '.join(unknown)}, not in this run ({', '.join(sorted(known))})")
        partition = None
        if s.fault_partition_agent and s.fault_partition_for > 0:
            start = s.fault_partition_at
            partition = Partition(s.fault_partition_agent, start, start + s.fault_partition_for)
        return cls(
            latency_ms=s.fault_latency_ms, jitter_ms=s.fault_jitter_ms, links=links, loss=s.fault_loss,
            partition=partition, slow_node=s.fault_slow_agent if s.fault_slow_ms > 0 else "",
            slow_ms=s.fault_slow_ms if s.fault_slow_agent else 0.0, redeliver_after=s.fault_redeliver_after,
            max_redeliveries=s.fault_max_redeliveries, seed=s.fault_seed, salt=salt,
        )  # fmt: skip


@dataclass(frozen=True)
class Fate:
    """What the network does to one crossing, decided when it starts (times: seconds of the run).

    ``lost`` holds when each lost copy left (the first at the decision; each next one
    ``redeliver_after`` later); the copy that gets through leaves at ``sent`` and arrives at
    ``at``. ``gave_up``: every copy was lost, the last at ``lost[-1]``. ``order`` numbers the
    decisions: of two fates due at the same time, the one decided first goes first."""

    order: int
    at: float
    sent: float
    lost: tuple[float, ...] = ()
    gave_up: bool = False
    causes: tuple[Cause, ...] = ()

    @property
    def delay_ms(self) -> float:
        """How long the copy that gets through is on its link (beyond no faults at all)."""
        return round((self.at - self.sent) * 1000, 3)

    @property
    def action(self) -> Action:
        """In one word: ``drop`` (a copy was lost: redelivered later), ``hold`` (a partition),
        ``delay``, or ``deliver`` (untouched)."""
        if self.lost:
            return "drop"
        if "partition" in self.causes:
            return "hold"
        return "delay" if self.at > self.sent else "deliver"


class FaultModel:
    """The seeded network of one run; remembers each link's last arrival to keep it in order."""

    def __init__(self, plan: FaultPlan) -> None:
        self.plan = plan
        self._rngs: dict[tuple[str, str], random.Random] = {}
        self._last: dict[tuple[str, str], float] = {}  # link direction -> its latest arrival
        self._order = itertools.count()

    def _rng(self, src: str, dst: str) -> random.Random:
        if (src, dst) not in self._rngs:  # str seeds hash with SHA-512: the same in every process
            self._rngs[(src, dst)] = random.Random(f"{self.plan.seed}:{self.plan.salt}:{src}>{dst}")
        return self._rngs[(src, dst)]

    def decide(self, src: str, dst: str, t: float) -> Fate:
        """The fate of a frame that starts from ``src`` to ``dst`` (one is the relay) at ``t``."""
        plan, rng = self.plan, self._rng(src, dst)
        node = dst if src == NETWORK_SRC else src
        causes: list[Cause] = []
        lost: list[float] = []
        sent = t
        if src == NETWORK_SRC and plan.loss > 0 and plan.on_link(node):
            while rng.random() < plan.loss:
                lost.append(sent)
                if len(lost) > plan.max_redeliveries:
                    return Fate(next(self._order), sent, sent, tuple(lost), gave_up=True, causes=("loss",))
                sent += plan.redeliver_after
            if lost:
                causes.append("loss")
        delay = 0.0
        if (plan.latency_ms or plan.jitter_ms) and plan.on_link(node):
            ms = plan.latency_ms + (rng.uniform(-plan.jitter_ms, plan.jitter_ms) if plan.jitter_ms else 0.0)
            if ms > 0:
                delay += ms / 1000
                causes.append("latency")
        if plan.slow_ms and node == plan.slow_node:
            delay += plan.slow_ms / 1000
            causes.append("slow")
        at = sent + delay
        if plan.partition is not None and plan.partition.holds(node, at):
            at = plan.partition.end
            causes.append("partition")
        last = self._last.get((src, dst))
        if last is not None and last > at:  # in order: never before the link's previous frame
            at = last
            causes.append("queued")
        self._last[(src, dst)] = at
        return Fate(next(self._order), at, sent, tuple(lost), causes=tuple(causes))


def network_faults(settings: FaultSettings, nodes: Iterable[str], task_id: str = "") -> FaultModel | None:
    """The fault model of a run of ``task_id``, or None when ``FAULT_*`` configures none (the
    relay then behaves, and writes every byte, exactly as without this module)."""
    plan = FaultPlan.from_settings(settings, nodes, task_id)
    return FaultModel(plan) if plan.active else None
