"""``AGENTS``, read: one :class:`AgentSpec` per agent a run may use (its node id, tool and
address), as the relay and the local launchers learn them."""

from __future__ import annotations

from typing import NamedTuple

from ..errors import ConfigError

DNS_PREFIX = "dns:"  # an AGENTS host that names a DNS name with one address per replica


class AgentSpec(NamedTuple):
    """``(node_id, tool, host, port, optional, entry)`` of one agent, as the relay learns it from
    ``AGENTS``.

    An optional agent (``?`` suffix) whose host name does not resolve is left out of the run:
    that is how the relay follows compose profiles that add agents. A host ``dns:NAME`` (swarm's
    ``tasks.<service>``, a service scaled by compose) stands for every address NAME resolves to:
    the relay turns it into one agent per address at the start of each run
    (:func:`gaiamesh.mesh.discovery.expand`), and ``entry`` is then the node id of the AGENTS
    entry it came from: the ``NODE_ID`` its replicas share, announce and stamp on their packets."""

    node_id: str
    tool: str
    host: str
    port: int
    optional: bool = False
    entry: str = ""

    @property
    def dns_name(self) -> str | None:
        """The DNS name whose addresses are this entry's replicas (None: one agent at ``host``)."""
        return self.host.removeprefix(DNS_PREFIX) if self.host.startswith(DNS_PREFIX) else None

    @property
    def announces(self) -> str:
        """The node id the agent itself announces and puts in its packets' ``src``."""
        return self.entry or self.node_id

    @property
    def url(self) -> str:
        return f"ws://{self.host}:{self.port}/ws"


def parse_agents(spec: str) -> list[AgentSpec]:
    """Parse ``"0=search@127.0.0.1:9000,1=extract@127.0.0.1:9001,4=search@h:9004?"`` into specs.

    ``0=search@dns:tasks.agent-search:9000`` names every replica that DNS name resolves to
    (expanded by the relay at the start of each run, :mod:`gaiamesh.mesh.discovery`).

    Raises ``ValueError`` with the offending entry on bad input.
    """
    agents: list[AgentSpec] = []
    for raw in spec.split(","):
        entry = raw.strip()
        if not entry:
            continue
        optional = entry.endswith("?")
        entry = entry.rstrip("?")
        try:
            node_id, rest = entry.split("=", 1)
            tool, addr = rest.split("@", 1)
            host, port = addr.rsplit(":", 1)
            agent = AgentSpec(node_id.strip(), tool.strip(), host.strip(), int(port), optional)
        except ValueError as exc:
            raise ConfigError(f"bad AGENTS entry {entry!r}: expected NODE_ID=TOOL@HOST:PORT") from exc
        if agent.dns_name == "":
            raise ConfigError(f"bad AGENTS entry {entry!r}: dns: needs a name (NODE_ID=TOOL@dns:NAME:PORT)")
        agents.append(agent)
    ids = [a.node_id for a in agents]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"duplicate node ids in AGENTS: {ids}")
    return agents
