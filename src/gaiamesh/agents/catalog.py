"""Every tool an agent can be given, by name: the tools of every strategy's team
(:data:`~gaiamesh.agents.teams.TEAMS`), each declared where it is written. ``gaiamesh agent``
looks its TOOL up here and hands it to the agent; the relay's tests and benchmarks read what
each consumes."""

from __future__ import annotations

from ..errors import ConfigError
from ..tools.tool import Tool
from .teams import TEAMS

CATALOG: dict[str, Tool] = {t.name: t for team in TEAMS.values() for t in team}


def get_tool(name: str) -> Tool:
    """The tool called ``name``; a :class:`~gaiamesh.errors.ConfigError` naming the others if none is."""
    try:
        return CATALOG[name]
    except KeyError:
        raise ConfigError(f"unknown tool {name!r}; available: {', '.join(sorted(CATALOG))}") from None


def subscriptions() -> dict[str, frozenset[str]]:
    """Tool name -> packet types it consumes (what each agent announces to the relay)."""
    return {t.name: frozenset({t.consumes.value}) for t in CATALOG.values()}


def readings() -> dict[str, frozenset[str]]:
    """Tool name -> packet types it only reads (every replica receives them)."""
    return {t.name: frozenset(r.value for r in t.reads) for t in CATALOG.values()}


def registered() -> list[str]:
    """The names of every tool, sorted."""
    return sorted(CATALOG)
