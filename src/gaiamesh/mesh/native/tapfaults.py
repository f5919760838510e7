"""Network faults on the native wire (``FAULT_*`` with ``TRANSPORT=native``): the same seeded plan
as the relay's links (``mesh/faults.py``), acting below the protocol's client, at the tap in front
of each agent. Pure decisions; the tap waits and resets as they say.

- **latency**, **jitter** and the **slow agent**: every chunk of bytes crossing the tap, either
  way, waits that long before it is forwarded (in order: a chunk never overtakes the one before).
- **partition**: what would cross the agent's tap inside the window waits until it ends; a client
  whose timeout is shorter gives up, as it would on a real network.
- **loss**: a request the relay's client sends to the agent is lost with ``FAULT_LOSS``'s
  probability, as a connection reset (what a lost request looks like to an HTTP client, which
  sees no packets): both ends of that connection are reset. Whether the frame is sent again is
  the protocol client's choice (its SDK's retries), not the relay's: a frame it gives up on ends
  the run ``frame_lost``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from ..faults import FaultPlan


@dataclass
class TapFaults:
    """The faults of one agent's tap, on the run's clock (``t``: seconds since the run's origin)."""

    plan: FaultPlan
    node: str
    _rng: dict[str, random.Random] = field(default_factory=dict)
    _last: dict[bool, float] = field(default_factory=dict)  # direction -> its latest release time

    def _random(self, what: str) -> random.Random:
        if what not in self._rng:  # str seeds hash with SHA-512: the same in every process
            self._rng[what] = random.Random(f"{self.plan.seed}:{self.plan.salt}:tap:{self.node}:{what}")
        return self._rng[what]

    def release_at(self, up: bool, t: float) -> float:
        """When a chunk that reached the tap at ``t`` going ``up`` (toward the agent) or down may be
        forwarded."""
        plan = self.plan
        delay = 0.0
        if (plan.latency_ms or plan.jitter_ms) and plan.on_link(self.node):
            jitter = self._random("up" if up else "down").uniform(-plan.jitter_ms, plan.jitter_ms) if plan.jitter_ms else 0.0
            delay += max(0.0, plan.latency_ms + jitter) / 1000
        if plan.slow_ms and self.node == plan.slow_node:
            delay += plan.slow_ms / 1000
        at = t + delay
        if plan.partition is not None and plan.partition.holds(self.node, at):
            at = plan.partition.end
        at = max(at, self._last.get(up, at))  # in order
        self._last[up] = at
        return at

    def lose_request(self) -> bool:
        """Whether the request the relay's client just began on this tap is lost (reset)."""
        plan = self.plan
        return plan.loss > 0 and plan.on_link(self.node) and self._random("loss").random() < plan.loss

    @property
    def active(self) -> bool:
        return self.plan.active
