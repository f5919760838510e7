"""The tool registry: each agent is bound to exactly one tool, looked up here by name."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..frames import Body, DocInit, PacketType, SubTask, SubTaskResult
from ..llm import LLMClient, LLMUsage
from ..settings import Settings


@dataclass
class ToolContext:
    """What a tool may use: the model client, this call's usage counter, the agent's memory for
    the run, and the question its output carries on (a tool may make it more precise, e.g. a
    follow-up question resolved against the conversation)."""

    llm: LLMClient
    usage: LLMUsage
    memory: dict[str, Any] = field(default_factory=dict)
    question: str = ""
    doc: DocInit | None = None  # the run's document, for tools that read it besides their input
    workspace: Path | None = None  # this agent's folder for the run (journals, files)
    settings: Settings | None = None
    # Hands a sub-task to a worker through the relay and returns its result (orchestrator only).
    ask: Callable[[SubTask], Awaitable[SubTaskResult]] | None = None


# A tool takes the packet type it consumes (a member of ``frames.Packet``) and returns the payload
# model of the type it emits.
ToolFn = Callable[[ToolContext, Any], Awaitable[Body]]


@dataclass(frozen=True)
class Tool:
    """A named tool: consumes one packet type, emits another (optionally tagged)."""

    name: str
    consumes: PacketType
    emits: PacketType
    run: ToolFn
    tag: str | None = None
    description: str = ""
    reads: frozenset[PacketType] = frozenset()  # also received, never answered (e.g. doc_init)
    # Checks the tool's own configuration when its agent starts (e.g. plan templates), so a
    # broken one stops the agent at once with the reason instead of failing its first run.
    setup: Callable[[Settings], None] | None = None
    # Ablation (ABLATE): the tool's output made from its input with no work, e.g. the facts
    # handed on without triples. None: the tool cannot be left out (it makes the answer).
    passthrough: Callable[[Any], Body] | None = None


_REGISTRY: dict[str, Tool] = {}


def register(tool: Tool) -> Tool:
    """Add a tool; later registrations of the same name replace earlier ones."""
    _REGISTRY[tool.name] = tool
    return tool


def get_tool(name: str) -> Tool:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ConfigError(f"unknown tool {name!r}; registered: {', '.join(sorted(_REGISTRY))}") from None


def subscriptions() -> dict[str, frozenset[str]]:
    """Tool name -> packet types it consumes (what each agent announces to the relay)."""
    return {t.name: frozenset({t.consumes.value}) for t in _REGISTRY.values()}


def readings() -> dict[str, frozenset[str]]:
    """Tool name -> packet types it only reads (every replica receives them)."""
    return {t.name: frozenset(r.value for r in t.reads) for t in _REGISTRY.values()}


def registered() -> list[str]:
    return sorted(_REGISTRY)
