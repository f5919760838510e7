"""The payloads of the mesh's packets: one model per packet type (``frames.py`` puts each in
its envelope), strict about unknown fields, validated once at the edge with the packet."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from ..errors import AgentFailed, GaiameshError, ModelUnreachable
from ..tasks import Turn  # a conversation turn: a task's history, and doc_init's


class Body(BaseModel):
    """A payload model: strict about unknown fields; absent optional fields stay off the wire."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_serializer(mode="wrap")
    def _drop_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if v is not None}


class DocInit(Body):
    chunks: list[str]
    history: list[Turn] | None = None  # a session's last turns, for follow-up questions


class Passage(Body):
    chunk: int = Field(ge=0)
    score: float
    text: str


class Split(Body):
    """How ``search`` split the question: ``inner`` names a bridge, ``outer`` asks about it
    (``{bridge}`` where it goes); both empty when one fact answers it. ``by``: the hop
    splitter's rules or the model."""

    by: Literal["rules", "model"]
    inner: str = Field(default="", max_length=1000)
    outer: str = Field(default="", max_length=1000)


class SearchDocs(Body):
    passages: list[Passage]
    n_chunks: int = Field(ge=0)
    split: Split | None = None  # None: no split was decided (search left out)


class Fact(Body):
    text: str
    score: float
    candidate: str | None = None  # the model's reading of this fact alone, when it read it


class Hop(Body):
    """One answered inner question of a two-fact question: its answer is the bridge."""

    question: str
    fact: str
    answer: str
    method: str


class Events(Body):
    facts: list[Fact]
    resolved_question: str | None = None
    hops: list[Hop] | None = None


class Triple(Body):
    subject: str
    relation: str
    object: str
    fact: str


class Triples(Body):
    triples: list[Triple]
    facts: list[Fact]
    resolved_question: str | None = None
    hops: list[Hop] | None = None


Maker = Literal["model", "template", "tool"]


class FinalAnswer(Body):
    answer: str
    method: str
    question: str
    reading: str
    candidates: list[str]
    facts_used: int = Field(ge=0)
    triples_seen: int = Field(ge=0)
    # Who made each decision behind the answer (the plan, each step): "model" (the model's
    # choice), "template" (a plan matched on the question's form), "tool" (a calculation, a
    # lookup with one candidate, hand-set weights).
    made_by: dict[str, Maker] = Field(default_factory=dict)


class ToolFailure(Body):
    tool: str
    error: str
    on: str
    # What failed: the tool itself, or the model server it could not reach (the run then ends
    # ``model_unreachable`` instead of ``agent_error``).
    kind: Literal["tool", "model_unreachable"] = "tool"

    @classmethod
    def of(cls, tool: str, on: str, exc: Exception) -> ToolFailure:
        """The failure an agent reports when its tool raised ``exc`` on a packet of type ``on``."""
        kind: Literal["tool", "model_unreachable"] = "model_unreachable" if isinstance(exc, ModelUnreachable) else "tool"
        return cls(tool=tool, error=str(exc), on=on, kind=kind)

    def as_error(self, message: str) -> GaiameshError:
        """The error kind this failure is, for the run's status (``errors.RUN_STATUS``)."""
        return ModelUnreachable(message) if self.kind == "model_unreachable" else AgentFailed(message)


class SubTask(Body):
    """One step of a plan, handed to a worker of ``assigned_agent_role`` (seed 004's fields)."""

    sub_task_id: str = Field(min_length=1, max_length=128)
    parent_task_id: str = Field(min_length=1, max_length=128)
    assigned_agent_role: str = Field(min_length=1, max_length=64)
    tool_name: str = Field(min_length=1, max_length=64)
    sub_task_input: dict[str, Any]
    context_summary: str = ""
    # The worker the sender chose (a stream's coordinator dispatches to the next free one); the
    # relay honours it while that agent is live, else picks another of the role. None: the relay picks.
    assigned_agent_id: str | None = Field(default=None, min_length=1, max_length=64)


class ErrorDetails(Body):
    message: str
    type: str | None = None


class SubTaskResult(Body):
    """A worker's outcome for one sub-task: ``result_data`` when ``COMPLETED``, else
    ``error_details``. ``processed_result_data`` is the typed reading of the result (a number,
    a year) that later steps may reference instead of the raw text."""

    sub_task_id: str = Field(min_length=1, max_length=128)
    parent_task_id: str = Field(min_length=1, max_length=128)
    worker_agent_role: str = Field(min_length=1, max_length=64)
    status: Literal["COMPLETED", "FAILED"]
    result_data: Any = None
    processed_result_data: Any = None
    error_details: ErrorDetails | None = None
    evidence: str | None = None  # the text the result was read from (for the working context)
    made_by: Maker | None = None  # the model (it asked the model to decide) or a tool alone
