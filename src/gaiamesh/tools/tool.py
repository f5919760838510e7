"""A declared tool: its name, the packet type it consumes and the one it emits, its typed run
function; and the context a tool may use. An agent is handed one tool explicitly."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..mesh.frames import PacketType
from ..mesh.payloads import Body, DocInit, SubTask, SubTaskResult
from ..models.llm import LLMClient, LLMUsage
from ..settings import ToolSettings

Parsed = Literal["json", "phrases"]


@dataclass
class ToolContext:
    """What a tool may use: the model client, this call's usage counter, the agent's memory for
    the run, and the question its output carries on (a tool may make it more precise, e.g. a
    follow-up question resolved against the conversation)."""

    llm: LLMClient
    usage: LLMUsage = field(default_factory=LLMUsage)
    memory: dict[str, Any] = field(default_factory=dict)
    question: str = ""
    doc: DocInit | None = None  # the run's document, for tools that read it besides their input
    workspace: Path | None = None  # this agent's folder for the run (journals, files)
    settings: ToolSettings | None = None
    # Whether to ask the model for output held to a JSON schema (typed answers, triples, plans):
    # SCHEMAS allows it and the agent found at start-up that its backend can.
    schemas: bool = False
    # Hands a sub-task to a worker through the relay and returns its result (orchestrator only).
    ask: Callable[[SubTask], Awaitable[SubTaskResult]] | None = None
    node_id: str = ""  # the agent's own id (a stream's worker says who answered)


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
    setup: Callable[[ToolSettings], None] | None = None
    # What, so configured, the tool asks its model for and parses: "json" (a plan, a split) or
    # "phrases" (triples, typed answers); None: nothing. The agent asks at start-up whether its
    # backend holds output to a JSON schema, and SCHEMAS decides (see agents.modelcheck.check_model).
    uses_schemas: Callable[[ToolSettings], Parsed | None] | None = None
    # Ablation (ABLATE): the tool's output made from its input with no work, e.g. the facts
    # handed on without triples. None: the tool cannot be left out (it makes the answer).
    passthrough: Callable[[Any], Body] | None = None
    # Whether the tool scores continuations (ANSWER_CHOICE): its agent then times one scoring
    # probe at start-up and chooses likelihood or weights (see agents.modelcheck.check_model).
    scores: bool = False
    # What the tool answers to a plain text request from outside the relay: the query and the
    # document it is about (the request's, or the run's its agent holds) in, passages of text
    # out. None: the tool takes packets only (it needs a model, or an earlier stage's output).
    text: Callable[[str, str], list[str]] | None = None

    @property
    def emitted(self) -> frozenset[PacketType]:
        """Every packet type its agent may emit: its output, ``error`` when it fails, and
        ``subtask`` for a tool that reads results (an agent gets a result only for a sub-task
        it sent)."""
        asks = {PacketType.SUBTASK} if PacketType.RESULT in self.reads else set()
        return frozenset({self.emits, PacketType.ERROR, *asks})
