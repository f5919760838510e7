"""The network service's API bodies and live events: one pydantic model each, validated once."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..evaluation.metrics import RunMetrics
from ..evaluation.streams import StreamProgress, StreamReport
from ..mesh.frames import Turn
from ..mesh.outcome import AgentStatus
from ..mesh.records import FrameRecord
from ..mesh.routing import RoutingMode


class RunState(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    FINISHED = "finished"  # the relay wrote metrics.json; its status says how it went
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"  # the service stopped while the run was queued or in flight


class Source(BaseModel):
    """What a run is about: a bundled task by name, or a document."""

    model_config = ConfigDict(extra="forbid")
    # where the questions about a document go, as the "nothing to run" message says it
    ASKED: ClassVar[str] = "with a 'question'"

    task: str | None = Field(default=None, description="name of a bundled task folder")
    document: str | None = Field(default=None, description="the document text, when no task is named")

    @model_validator(mode="after")
    def _one_source(self) -> Source:
        if self.task is None and self.document is None:
            raise ValueError(
                "nothing to run: give 'task' (the name of a bundled task, e.g. \"solar-farm\") or 'document' "
                f"(the text to ask about, {self.ASKED})"
            )
        if self.task is not None and self.document is not None:
            raise ValueError("give either 'task' (a bundled task name) or 'document', not both")
        return self


class RunOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    protocol: str | None = None
    transport: Literal["relay", "native"] | None = Field(
        default=None, description="relay: the relay's WebSocket; native: the protocol's own wire (default: TRANSPORT)"
    )
    routing: RoutingMode | None = None
    strategy: Literal["pipeline", "orchestrated"] | None = Field(
        default=None, description="the team that answers (default: STRATEGY)"
    )
    rejoin_grace: float | None = Field(
        default=None, ge=0, le=3600,
        description="seconds the run waits for a tool whose agents are all down (default: REJOIN_GRACE)",
    )  # fmt: skip
    run_timeout: float | None = Field(
        default=None, gt=0, le=86400, description="seconds the run may take before it ends `timeout` (default: RUN_TIMEOUT)"
    )


class RunRequest(Source, RunOptions):
    """``POST /api/runs``: a task, or a document with a question."""

    question: str | None = Field(default=None, description="required with 'document'; overrides a task's")
    answer: str | None = Field(
        default=None, description="ground truth to score against, if known (without one the run is not scored)"
    )
    answers: list[str] | None = Field(default=None, description="several ground truths (scores take the best)")
    name: str | None = Field(
        default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$",
        description="what a run on a document is called in its metrics (task_id; default 'document')",
    )  # fmt: skip
    history: list[Turn] | None = Field(default=None, description="earlier turns, for a follow-up question")

    @model_validator(mode="after")
    def _question_for_document(self) -> RunRequest:
        if self.document is not None and not (self.question or "").strip():
            raise ValueError("a run on a document needs a 'question'")
        return self


class RunView(BaseModel):
    """A run as the API shows it."""

    id: str
    state: RunState
    session_id: str | None
    task_id: str
    question: str
    queue_position: int | None = None  # 1 = next to start
    created: float
    started: float | None = None
    finished: float | None = None
    error: str | None = None
    # what the run runs with (the request's choice, else the service's default), from the start
    strategy: str | None = None
    protocol: str | None = None
    transport: str | None = None
    metrics: RunMetrics | None = None


# --- live events ------------------------------------------------------------------------------
class FrameEvent(BaseModel):
    kind: Literal["frame"] = "frame"
    seq: int
    t_ms: float
    src: str
    dst: list[str]
    type: str | None
    tag: str | None
    bytes: int
    header_bytes: int
    token_used: int | None  # null: the model server gave no counts
    status: str
    error: str | None

    @classmethod
    def of(cls, seq: int, r: FrameRecord) -> FrameEvent:
        return cls(
            seq=seq, t_ms=r.t_ms, src=r.src, dst=r.dst, type=r.type, tag=r.tag, bytes=r.size,
            header_bytes=r.header_size, token_used=r.token_used, status=r.status, error=r.error,
        )  # fmt: skip


class StateEvent(BaseModel):
    kind: Literal["state"] = "state"
    seq: int
    state: RunState
    error: str | None = None


class NoteEvent(BaseModel):
    kind: Literal["note"] = "note"
    seq: int
    text: str


class TeamEvent(BaseModel):
    """The run's agents and whether the relay holds each one's connection: sent when the relay
    has connected, and again whenever an agent is lost."""

    kind: Literal["team"] = "team"
    seq: int
    agents: list[AgentStatus]


class JournalEvent(BaseModel):
    """One line of an orchestrator's ``journal.jsonl`` (plans, steps, revisions), as written."""

    kind: Literal["journal"] = "journal"
    seq: int
    node_id: str
    entry: dict[str, Any]


class MetricsEvent(BaseModel):
    kind: Literal["metrics"] = "metrics"
    seq: int
    metrics: RunMetrics


RunEvent = Annotated[
    FrameEvent | StateEvent | NoteEvent | TeamEvent | JournalEvent | MetricsEvent, Field(discriminator="kind")
]


# --- sessions ---------------------------------------------------------------------------------
class SessionState(StrEnum):
    INIT = "INIT"
    RUNNING = "RUNNING"
    STOP = "STOP"


class MessageType(StrEnum):
    QUESTION = "question"
    FRAME = "frame"
    ANSWER = "answer"
    METRICS = "metrics"
    ERROR = "error"
    SYSTEM = "system"


class Queued(BaseModel):
    """One message AutoChat will send: a question about the session's document, or another
    bundled task (its own question unless one is given)."""

    model_config = ConfigDict(extra="forbid")

    question: str | None = Field(default=None, min_length=1, max_length=2000)
    answer: str | None = None
    task: str | None = None

    @model_validator(mode="after")
    def _something(self) -> Queued:
        if self.question is None and self.task is None:
            raise ValueError("a queued message needs a 'question' or a 'task'")
        return self


class AutoChat(BaseModel):
    """A session that sends its next message itself whenever it reaches STOP."""

    model_config = ConfigDict(extra="forbid")

    queue: list[Queued] = Field(default_factory=list, description="sent first, in order")
    all_tasks: bool = Field(default=False, description="queue every bundled task (a batch from one session)")
    continuation: str | None = Field(default=None, description="sent when the queue is empty")
    max_turns: int = Field(default=10, ge=1, le=100, description="messages AutoChat sends at most")
    enabled: bool = True
    sent: int = 0


class SessionRequest(Source, RunOptions):
    """``POST /api/sessions``: what the conversation is about, and optionally AutoChat (it starts
    at once: the first queued message is sent when the session is created). Its questions are
    messages of their own (``Ask``), not part of this body."""

    ASKED: ClassVar[str] = "then send each question to POST /api/sessions/{id}/messages"

    autochat: AutoChat | None = None

    @model_validator(mode="before")
    @classmethod
    def _no_question(cls, data: Any) -> Any:
        if isinstance(data, dict) and "question" in data:
            raise ValueError(
                "a session is created without a 'question': create it, then send each question to "
                "POST /api/sessions/{id}/messages (or queue them in 'autochat')"
            )
        return data


class AutoChatSwitch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool


class SessionCreated(BaseModel):
    id: str
    token: str
    expires_at: float
    state: SessionState


class SessionView(BaseModel):
    id: str
    state: SessionState
    created: float
    task: str | None
    messages: int
    dropped: int
    runs: list[str]
    autochat: AutoChat | None = None


class Message(BaseModel):
    id: int
    type: MessageType
    run_id: str | None
    content: dict[str, object]
    created: float


class History(BaseModel):
    messages: list[Message]
    dropped: int = Field(description="older messages dropped to keep the history capped")


class Ask(BaseModel):
    """``POST /api/sessions/{id}/messages``."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, max_length=2000)
    answer: str | None = Field(default=None, description="the right answer, if known, to score the run")


class StateChange(BaseModel):
    model_config = ConfigDict(extra="forbid")

    state: SessionState


# --- streams ----------------------------------------------------------------------------------
class StreamState(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"  # stream.json written: its report says how the items went
    FAILED = "failed"  # the stream could not run (error.txt says why)
    INTERRUPTED = "interrupted"  # the service stopped while the stream was queued or running


class StreamRequest(BaseModel):
    """``POST /api/streams``: a set of items through a coordinator and ``workers`` workers, in
    local processes the service starts beside itself, or the deployment's own stream team
    (``gaiamesh stream --team``, docs/stream.md)."""

    model_config = ConfigDict(extra="forbid")

    tasks: str = Field(
        min_length=1, max_length=100,
        description="a name, never a path: a bundled stream set (protocolbench-top1000), or a task folder "
                    "or task set in TASKS_DIR",
    )  # fmt: skip
    workers: int = Field(default=4, ge=0, le=64, description="worker agents beside the coordinator (team deployed: "
                         "the first N of the deployment's answerers, 0 for all)")  # fmt: skip
    team: Literal["local", "deployed"] = Field(
        default="local", description="local: processes the service starts beside itself; deployed: the stack's "
                                     "agent-coordinator and agent-answerer replicas (compose or swarm profile stream)",
    )  # fmt: skip
    protocol: str | None = Field(default=None, description="the wire protocol (default: PROTOCOL)")
    transport: Literal["relay", "native"] | None = Field(default=None, description="default: TRANSPORT")
    limit: int = Field(default=0, ge=0, description="the first N items only (0: all)")
    policy: Literal["dynamic", "round-robin"] = "dynamic"
    per_worker: int = Field(default=1, ge=1, le=64, description="items in flight on a worker at most")
    replay_of: str | None = Field(
        default=None, description="the id of an earlier stream of this service that is done: its recorded model "
                                  "calls answer this one (no model server)",
    )  # fmt: skip
    pace: Literal["recorded", "none"] = Field(
        default="recorded", description="with replay_of: each call takes its recorded time, or none"
    )


class StreamRecord(BaseModel):
    """``request.json`` in a stream's folder, written when it is accepted: what was asked, when."""

    model_config = ConfigDict(extra="forbid")

    id: str
    created: float
    request: StreamRequest


class StreamView(BaseModel):
    """A stream as the API shows it."""

    id: str
    state: StreamState
    request: StreamRequest
    created: float
    ended: float | None = None
    error: str | None = None
    report: StreamReport | None = None  # stream.json, when done
    progress: StreamProgress | None = None  # while it runs: the items told so far (local team)
