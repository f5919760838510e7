"""Who receives a packet: the seed's broadcast, topic subscription, or work sharing.

- ``broadcast``: every live agent but the sender (the seed's behaviour, the default).
- ``topic``: only live agents that consume the packet type (as each agent announced when the
  relay connected, or as configured in ``TOPICS`` for agents that announce nothing).
- ``share``: like ``topic``, but one agent per tool group, so that same-tool agents (the
  ``wide`` profile) split the work instead of duplicating it. The member is picked round-robin
  by one counter over all deliveries, so consecutive pipeline stages land on different replicas.
- ``auto`` (default): ``broadcast`` when each tool has one agent, ``share`` when any has more.

Whatever the mode, the orchestrated strategy's queues are addressed: a ``subtask`` goes to one
live agent of its assigned role (:meth:`Router.pick`, round-robin among replicas) and a
``result`` to the orchestrator that sent the sub-task (the core remembers who that was).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping

from ..settings import RoutingMode  # the modes, as configuration names them


def resolve_mode(mode: RoutingMode, tools: list[str]) -> RoutingMode:
    """Turn ``auto`` into a concrete mode for this line-up of agent tools."""
    if mode is not RoutingMode.AUTO:
        return mode
    return RoutingMode.SHARE if len(set(tools)) < len(tools) else RoutingMode.BROADCAST


class Router:
    """Chooses destinations among registered, live agents. Dead agents are deregistered."""

    def __init__(
        self,
        mode: RoutingMode,
        agents: Iterable[tuple[str, str]],
        subscriptions: Mapping[str, frozenset[str]] | None = None,
        start: int = 0,
    ) -> None:
        self._tools: dict[str, str] = dict(agents)  # node_id -> tool, in configuration order
        self._configured = RoutingMode(mode)
        self.mode = resolve_mode(self._configured, list(self._tools.values()))
        self._subs = dict(subscriptions or {})  # tool -> packet types, from configuration
        self._announced: dict[str, frozenset[str]] = {}  # node -> packet types it announced
        self._reads: dict[str, frozenset[str]] = {}  # node -> packet types it only reads
        self._live: set[str] = set(self._tools)
        # ``share`` hands work out in turn from here: a service passes how many runs it has
        # started, so that a tool's first piece of work goes to a different replica each run.
        self._turn = itertools.count(start)

    @property
    def live(self) -> list[str]:
        return [n for n in self._tools if n in self._live]

    def tool_of(self, node_id: str) -> str:
        return self._tools[node_id]

    def remove(self, node_id: str) -> None:
        """Deregister a dead agent: it receives nothing more."""
        self._live.discard(node_id)

    def restore(self, node_id: str) -> None:
        """Register a returning agent again: it receives its share of traffic from now on."""
        if node_id in self._tools:
            self._live.add(node_id)

    def add(self, node_id: str, tool: str) -> None:
        """Register an agent that joined while the run goes on (a replica found by DNS), live.
        ``auto`` turns to ``share`` when its tool now has two live agents, so that they split the
        work instead of both doing it; it never turns back (a run that shared keeps sharing)."""
        self._tools.setdefault(node_id, tool)
        self._live.add(node_id)
        if self._configured is RoutingMode.AUTO and self.mode is RoutingMode.BROADCAST:
            self.mode = resolve_mode(self._configured, [self._tools[n] for n in self.live])

    def subscribe(self, node_id: str, consumes: frozenset[str], reads: frozenset[str] = frozenset()) -> None:
        """Record the packet types an agent announced it consumes (overrides the configured table)
        and those it only reads."""
        self._announced[node_id] = consumes
        self._reads[node_id] = reads

    def reads(self, node_id: str, ptype: str) -> bool:
        """Whether agent ``node_id`` reads packets of type ``ptype`` without working on them."""
        return ptype in self._reads.get(node_id, frozenset())

    def consumes(self, node_id: str, ptype: str) -> bool:
        """Whether agent ``node_id`` works on packets of type ``ptype``."""
        subs = self._announced.get(node_id)
        if subs is None:
            subs = self._subs.get(self._tools[node_id], frozenset())
        return ptype in subs

    def tool_consumes(self, tool: str, ptype: str) -> bool:
        """Whether agents of ``tool`` work on ``ptype`` (from any of them, live or not)."""
        return any(self.consumes(n, ptype) for n, t in self._tools.items() if t == tool)

    def group_alive(self, tool: str) -> bool:
        return any(self._tools[n] == tool for n in self._live)

    def members(self, tool: str) -> list[str]:
        """The live agents of ``tool``, in the order they were registered."""
        return [n for n in self.live if self._tools[n] == tool]

    def pick(self, tool: str, exclude: Iterable[str] = ()) -> list[str]:
        """One live agent of ``tool`` (round-robin among replicas) not in ``exclude``; [] if none."""
        skip = set(exclude)
        members = [n for n in self.members(tool) if n not in skip]
        return [members[next(self._turn) % len(members)]] if members else []

    def subscribers(self, ptype: str, src: str) -> list[str]:
        """Every live agent but ``src`` that consumes ``ptype``."""
        return [n for n in self.live if n != src and self.consumes(n, ptype)]

    def destinations(self, ptype: str, src: str, exclude: Iterable[str] = ()) -> list[str]:
        """Node ids that receive a packet of type ``ptype`` sent by ``src``."""
        skip = {src, *exclude}
        candidates = [n for n in self.live if n not in skip]
        if self.mode is RoutingMode.BROADCAST:
            return candidates
        subscribers = [n for n in candidates if self.consumes(n, ptype)]
        readers = [n for n in candidates if self.reads(n, ptype) and n not in subscribers]
        if self.mode is RoutingMode.TOPIC:
            return subscribers + readers
        chosen: list[str] = []
        groups: dict[str, list[str]] = {}
        for n in subscribers:
            groups.setdefault(self._tools[n], []).append(n)
        for members in groups.values():
            chosen.append(members[next(self._turn) % len(members)])
        return chosen + readers
