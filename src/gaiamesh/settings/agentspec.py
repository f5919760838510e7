"""``AGENTS``, read: one :class:`AgentSpec` per agent a run may use (its node id, tool and
address), as the relay and the local launchers learn them; an agent written by someone else is
named by its protocol and URL (:class:`ExternalAgent`, ``docs/external-agents.md``)."""

from __future__ import annotations

from typing import Literal, NamedTuple, get_args
from urllib.parse import urlsplit, urlunsplit

from ..errors import ConfigError

DNS_PREFIX = "dns:"  # an AGENTS host that names a DNS name with one address per replica

ExternalProtocol = Literal["a2a", "mcp"]
EXTERNAL_PROTOCOLS: tuple[str, ...] = get_args(ExternalProtocol)


class ExternalAgent(NamedTuple):
    """An agent the mesh did not write, reached by its protocol's plain semantics: ``a2a`` (a
    text message in, the text of the reply out) or ``mcp`` (``tool`` called with the text as its
    one string argument, the text content out). ``url``: where its protocol answers, plain HTTP."""

    protocol: ExternalProtocol
    url: str
    tool: str = ""  # mcp: the tool to call (the URL's #fragment)

    @property
    def written(self) -> str:
        """The address as an AGENTS entry writes it (``mcp+http://host:9400/mcp/#answer``)."""
        return f"{self.protocol}+{self.url}" + (f"#{self.tool}" if self.tool else "")


def parse_external(addr: str) -> ExternalAgent:
    """``a2a+http://host:9300/`` or ``mcp+http://host:9400/mcp/#answer`` as an external agent;
    a :class:`ConfigError` saying what is wrong otherwise."""
    scheme, _, rest = addr.partition("://")
    protocol, _, transport = scheme.partition("+")
    if protocol not in EXTERNAL_PROTOCOLS or transport != "http":
        raise ConfigError(
            f"unknown external agent scheme {scheme!r}: expected "
            f"{' or '.join(p + '+http' for p in EXTERNAL_PROTOCOLS)}://HOST:PORT/PATH"
        )
    parts = urlsplit(f"http://{rest}")
    try:
        port = parts.port
    except ValueError as exc:
        raise ConfigError(f"external agent {addr!r}: bad port ({exc})") from exc
    if not parts.hostname:
        raise ConfigError(f"external agent {addr!r} names no host")
    tool = parts.fragment
    if protocol == "mcp" and not tool:
        raise ConfigError(f"external agent {addr!r}: an MCP agent needs the tool to call, as #TOOL at the end")
    if protocol == "a2a" and tool:
        raise ConfigError(f"external agent {addr!r}: an A2A agent takes no #tool (it answers messages)")
    del port  # checked above; the URL keeps it as written
    url = urlunsplit(("http", parts.netloc, parts.path or "/", parts.query, ""))
    return ExternalAgent("a2a" if protocol == "a2a" else "mcp", url, tool)


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
    external: ExternalAgent | None = None  # an agent the mesh did not write (NODE_ID=TOOL@a2a+http://...)

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
    ``3=reason@a2a+http://host:9300/`` and ``5=research@mcp+http://host:9400/mcp/#answer`` name
    agents written by someone else (:func:`parse_external`).

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
            if "://" in addr:
                agent = _external(node_id.strip(), tool.strip(), addr.strip(), optional)
            else:
                host, port = addr.rsplit(":", 1)
                agent = AgentSpec(node_id.strip(), tool.strip(), host.strip(), int(port), optional)
        except ConfigError as exc:
            raise ConfigError(f"bad AGENTS entry {entry!r}: {exc}") from exc
        except ValueError as exc:
            raise ConfigError(f"bad AGENTS entry {entry!r}: expected NODE_ID=TOOL@HOST:PORT") from exc
        if agent.dns_name == "":
            raise ConfigError(f"bad AGENTS entry {entry!r}: dns: needs a name (NODE_ID=TOOL@dns:NAME:PORT)")
        agents.append(agent)
    ids = [a.node_id for a in agents]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"duplicate node ids in AGENTS: {ids}")
    return agents


def _external(node_id: str, tool: str, addr: str, optional: bool) -> AgentSpec:
    """The spec of an external agent: its host and port are its URL's (what the relay's tap
    connects to)."""
    external = parse_external(addr)
    parts = urlsplit(external.url)
    return AgentSpec(node_id, tool, parts.hostname or "", parts.port or 80, optional, external=external)
