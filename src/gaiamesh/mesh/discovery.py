"""Agents found through DNS: one agent per address of a ``dns:`` entry, at the start and during a run.

An ``AGENTS`` entry ``0=search@dns:tasks.agent-search:9000`` names a DNS name with one address per
replica (swarm's ``tasks.<service>``, or a compose service scaled with ``--scale``). At the start
of each run the relay resolves it (:func:`resolve_ipv4`, IPv4 only) and :func:`expand` turns each
address into one agent of the entry's tool, with a node id derived from the entry and the address
(:func:`replica_id`: ``0.10-0-1-5``), so ``share`` routing spreads the work among them and every
counter stays per replica. Entries without ``dns:`` pass through unchanged.

While the run goes on the relay looks the names up again every ``DISCOVERY_INTERVAL`` seconds
(:func:`resolve_all`), and :func:`reconcile` decides what changed: a replica whose address
appeared joins the run, and a lost one (connection down) whose address left DNS is let go. A
replica whose connection is up is never let go for a look-up that misses it (DNS may blip).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence, Set
from dataclasses import dataclass, field

from ..errors import ConfigError
from ..settings import AgentSpec
from .frames import Announcement

Resolver = Callable[[str, int], Awaitable[list[str]]]  # (name, port) -> IPv4 addresses


@dataclass(frozen=True)
class Lineup:
    """Whom a run may use: the agents of ``AGENTS`` that answer with its strategy, and the tools
    that strategy's team is made of (whoever starts the relay knows the teams: ``agents/teams.py``)."""

    strategy: str
    tools: tuple[str, ...]
    agents: tuple[AgentSpec, ...]
    # The external agents among them (no handshake of theirs): node id -> the announcement the
    # relay makes for each from its tool's declaration.
    externals: Mapping[str, Announcement] = field(default_factory=dict)


RESOLVE_TIMEOUT_S = 5.0  # one lookup of a name
RESOLVE_RETRY_S = 0.5  # between lookups of a required entry's name that gave no address yet


def replica_id(entry: str, address: str) -> str:
    """The node id of the replica at ``address`` of the AGENTS entry ``entry``: the entry's id, a
    dot, the address with dashes (``0`` at 10.0.1.5 is ``0.10-0-1-5``). The same replica keeps
    its id from run to run as long as it keeps its address; it is also a safe folder name."""
    return f"{entry}.{address.replace('.', '-')}"


def expand(specs: Sequence[AgentSpec], addresses: Mapping[str, Sequence[str]]) -> list[AgentSpec]:
    """``specs`` with each ``dns:`` entry replaced by one agent per address its name resolved to
    (``addresses``: name -> IPv4 addresses; a name missing or empty gives no agent), sorted by
    address; other entries unchanged and in their place. Raises ``ConfigError`` when two agents
    would share a node id (an entry named like another's replica)."""
    out: list[AgentSpec] = []
    for spec in specs:
        name = spec.dns_name
        if name is None:
            out.append(spec)
            continue
        for address in sorted(set(addresses.get(name, ())), key=ipaddress.IPv4Address):
            out.append(
                AgentSpec(replica_id(spec.node_id, address), spec.tool, address, spec.port, spec.optional, spec.node_id)
            )
    ids = [s.node_id for s in out]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"duplicate node ids in AGENTS once its dns: entries are resolved: {ids}")
    return out


def unresolved(configured: Sequence[AgentSpec], here: Sequence[AgentSpec]) -> str | None:
    """Why the run cannot start: a required ``dns:`` entry of ``configured`` has no replica
    ``here``. None when every required entry has one."""
    found = {s.entry for s in here if s.entry}
    missing = [s for s in configured if s.dns_name is not None and not s.optional and s.node_id not in found]
    if not missing:
        return None
    return "; ".join(
        f"AGENTS entry {s.node_id} ({s.tool}) names {s.host}, which resolves to no IPv4 address "
        "(is the service running, and is the relay on its network?)"
        for s in missing
    )


@dataclass(frozen=True)
class Change:
    """What one look-up of the ``dns:`` entries changes in a run's line-up."""

    joined: tuple[AgentSpec, ...] = ()  # replicas to connect to and add (or take back)
    left: tuple[str, ...] = ()  # node ids of lost replicas to let go


def reconcile(
    entries: Sequence[AgentSpec],
    addresses: Mapping[str, Sequence[str]],
    known: Mapping[str, AgentSpec],
    active: Set[str],
    down: Set[str],
) -> Change:
    """The change one look-up makes. ``entries``: the ``dns:`` entries of AGENTS; ``addresses``:
    what their names resolve to now; ``known``: every agent the run has had, by node id;
    ``active``: those not let go, and those being connected; ``down``: those whose connection
    is down. A replica whose address is new (or came back after it was let go) joins, unless an
    agent of another entry has its node id; a down replica whose address is gone is let go."""
    found = {s.node_id: s for s in expand([e for e in entries if e.dns_name is not None], addresses)}
    joined = tuple(s for n, s in found.items() if n not in active and known.get(n, s) == s)
    left = tuple(n for n in known if n in down and n in active and known[n].entry and n not in found)
    return Change(joined, left)


async def resolve_ipv4(name: str, port: int) -> list[str]:
    """The IPv4 addresses ``name`` resolves to, sorted; none when it does not resolve."""
    try:
        async with asyncio.timeout(RESOLVE_TIMEOUT_S):
            infos = await asyncio.get_running_loop().getaddrinfo(
                name, port, family=socket.AF_INET, type=socket.SOCK_STREAM
            )
    except (OSError, TimeoutError):
        return []
    return sorted({str(info[4][0]) for info in infos}, key=ipaddress.IPv4Address)


async def resolve_all(entries: Sequence[AgentSpec], resolve: Resolver = resolve_ipv4) -> dict[str, list[str]]:
    """Each ``dns:`` name of ``entries`` -> the addresses it resolves to now (one look-up each)."""
    names = {e.dns_name: e.port for e in entries if e.dns_name is not None}
    found = await asyncio.gather(*(resolve(name, port) for name, port in names.items()))
    return dict(zip(names, found, strict=True))


async def discover(specs: Sequence[AgentSpec], wait: float = 0.0, resolve: Resolver = resolve_ipv4) -> list[AgentSpec]:
    """Resolve every ``dns:`` entry of ``specs`` once and :func:`expand` them. The name of a
    required entry that gives no address is looked up again for up to ``wait`` seconds (its
    replicas may still be starting, as the relay waits ``CONNECT_TIMEOUT`` for other agents)."""
    deadline = time.monotonic() + wait

    async def lookup(spec: AgentSpec, name: str) -> list[str]:
        while True:
            found = await resolve(name, spec.port)
            if found or spec.optional or time.monotonic() >= deadline:
                return found
            await asyncio.sleep(RESOLVE_RETRY_S)  # retry back-off: DNS gives no signal when a replica registers

    named = [s for s in specs if s.dns_name is not None]
    found = await asyncio.gather(*(lookup(s, s.dns_name or "") for s in named))
    addresses: dict[str, list[str]] = {}
    for spec, addrs in zip(named, found, strict=True):
        addresses.setdefault(spec.dns_name or "", []).extend(addrs)
    return expand(specs, addresses)


PRESENCE_TIMEOUT_S = 5.0  # how long a name lookup may take before an optional agent counts as absent


async def present(specs: list[AgentSpec], wait: float = 0.0, resolve: Resolver = resolve_ipv4) -> list[AgentSpec]:
    """The agents a run can use: every required one, each optional one (``?`` in AGENTS) whose
    host name resolves, i.e. whose compose profile is on, and one agent per address of each
    ``dns:`` entry (:func:`~gaiamesh.mesh.discovery.discover`, which looks a required entry's
    name up again for up to ``wait`` seconds)."""

    async def here(spec: AgentSpec) -> bool:
        if not spec.optional or spec.dns_name is not None:
            return True
        try:
            async with asyncio.timeout(PRESENCE_TIMEOUT_S):
                await asyncio.get_running_loop().getaddrinfo(spec.host, spec.port)
        except (OSError, TimeoutError):
            return False
        return True

    found = await asyncio.gather(*(here(s) for s in specs))
    return await discover([s for s, ok in zip(specs, found, strict=True) if ok], wait, resolve)


def missing_team(lineup: Lineup, here: list[AgentSpec]) -> str | None:
    """Why the agents ``here`` cannot answer with the run's strategy: a tool of its team that
    ``AGENTS`` lists (as optional agents) has none running. In words that say how to start
    them; None when every listed tool has an agent."""
    tools = {s.tool for s in here}
    listed = {s.tool for s in lineup.agents}
    missing = [t for t in lineup.tools if t in listed and t not in tools]
    if not missing:
        return None
    strategy = lineup.strategy
    return (
        f"the {strategy} strategy needs agents with the tools {', '.join(missing)}, and none is "
        f"running: start them with the compose profile '{strategy}' (docker compose --profile "
        f"{strategy} up -d, or COMPOSE_PROFILES={strategy} in .env before make up), "
        "or ask for another strategy"
    )
