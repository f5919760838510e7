"""Each strategy's team, declared once from the strategy's own tools: the four-agent pipeline of
seed 000 (``pipeline.TOOLS``) and seed 004's orchestrator with its research and utility workers
(``orchestrated.TOOLS``), and a stream's coordinator with its answerers (``stream.team.TOOLS``;
``gaiamesh stream`` lines up N answerers). One agent per tool by default.

``AGENTS`` unset (empty) means the run's strategy's own team on 127.0.0.1 from port 9000:
:func:`settled` writes that line out where the settings are loaded, so that what a run records
(``config.json``) and hands its child processes names its agents; :func:`lineup` reads either."""

from __future__ import annotations

from typing import TypeVar

from ..errors import ConfigError
from ..mesh.discovery import Lineup
from ..mesh.external import STANDS_IN
from ..mesh.frames import Announcement
from ..orchestrated import TOOLS as ORCHESTRATED
from ..pipeline import TOOLS as PIPELINE
from ..settings import AgentSpec, MeshSettings, parse_agents
from ..stream.team import TOOLS as STREAM
from ..tools.tool import Tool

TEAMS: dict[str, tuple[Tool, ...]] = {"pipeline": PIPELINE, "orchestrated": ORCHESTRATED, "stream": STREAM}

Mesh = TypeVar("Mesh", bound=MeshSettings)


def tools_of(strategy: str) -> tuple[str, ...]:
    """The names of the tools that make ``strategy``'s team, in their order."""
    return tuple(t.name for t in TEAMS[strategy])


def default_agents(base_port: int = 9000, host: str = "127.0.0.1", strategy: str = "pipeline") -> str:
    """A strategy's default line-up, one agent per tool on consecutive ports."""
    return ",".join(f"{i}={tool}@{host}:{base_port + i}" for i, tool in enumerate(tools_of(strategy)))


def settled(settings: Mesh) -> Mesh:
    """``settings`` with ``AGENTS`` written out: its strategy's own team when it was left unset.
    An external agent named for a tool it cannot stand in for is refused here, where the relay's
    settings are loaded (a ``ConfigError``: the command's exit code 2, the service not started)."""
    if settings.agents:
        for spec in parse_agents(settings.agents):
            if spec.external is not None:
                external_announcement(spec)
        return settings
    return settings.model_copy(update={"agents": default_agents(strategy=settings.strategy)})


def agent_specs(settings: MeshSettings) -> list[AgentSpec]:
    """Every agent ``AGENTS`` lists (unset: the strategy's own team)."""
    return parse_agents(settings.agents or default_agents(strategy=settings.strategy))


def team_specs(settings: MeshSettings) -> list[AgentSpec]:
    """The agents of ``AGENTS`` that answer with this run's strategy: one ``AGENTS`` may list
    both teams (compose does), and each run takes its own strategy's tools, plus any tool
    that belongs to no strategy."""
    others = {t for s in TEAMS if s != settings.strategy for t in tools_of(s)}
    mine = set(tools_of(settings.strategy))
    return [a for a in agent_specs(settings) if a.tool in mine or a.tool not in others]


def lineup(settings: MeshSettings) -> Lineup:
    """Whom a run with ``settings`` may use, for the relay (:class:`~gaiamesh.mesh.relay.MeshNetwork`)."""
    specs = team_specs(settings)
    outside = {s.node_id: external_announcement(s) for s in specs if s.external is not None}
    return Lineup(settings.strategy, tools_of(settings.strategy), tuple(specs), outside)


def standing_in() -> list[str]:
    """The tools an external agent may stand in for: those whose output is text with a clear
    meaning (the pipeline's answer, a worker's result: ``mesh.external.STANDS_IN``)."""
    return sorted({t.name for team in TEAMS.values() for t in team if t.consumes in STANDS_IN})


def external_announcement(spec: AgentSpec) -> Announcement:
    """What an external agent would announce if it could: its tool's declaration (what it works
    on, what it reads), made by the relay since the agent has no handshake of ours; a
    :class:`ConfigError` for a tool it cannot stand in for."""
    tools = {t.name: t for team in TEAMS.values() for t in team}
    tool = tools.get(spec.tool)
    if tool is None or tool.consumes not in STANDS_IN:
        raise ConfigError(f"AGENTS entry {spec.node_id}={spec.tool}: an external agent (text in, text out) can "
                          f"stand in for {', '.join(standing_in())}, not {spec.tool!r}")  # fmt: skip
    return Announcement(node_id=spec.announces, tool=tool.name, consumes=frozenset({tool.consumes.value}),
                        reads=frozenset(r.value for r in tool.reads))  # fmt: skip
