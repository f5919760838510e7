"""Typed packets: what agents and the relay say to each other, validated once at the edge.

A packet is an envelope (run, sender, sequence, tag, question, the model's token count) around a payload whose shape depends on the packet type (its model in ``payloads.py``). :data:`Packet` is the
discriminated union of one model per type, so ``parse_packet`` picks the payload model from
``type`` and rejects anything else with a message that names the offending field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from enum import StrEnum
from typing import Annotated, Any, Literal, Union, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic.json_schema import GenerateJsonSchema

from ..errors import FrameError
from ..tasks import Turn  # a conversation turn: a task's history, and doc_init's
from .payloads import (
    Body,
    DocInit,
    Events,
    FinalAnswer,
    SearchDocs,
    SubTask,
    SubTaskResult,
    ToolFailure,
    Triples,
)


class PacketType(StrEnum):
    """Every packet type on the mesh. Unknown types are rejected at the edge."""

    DOC_INIT = "doc_init"  # relay -> all agents at t=0: document chunks and the question
    SEARCH_DOCS = "search_docs"  # search -> retrieved passages
    EVENTS = "events"  # extract -> candidate facts
    TRIPLES = "triples"  # triple -> subject/relation/object triples
    DATA_EVENT = "data_event"  # reason -> tag=final_answer
    ERROR = "error"  # an agent reports that its tool failed
    SUBTASK = "subtask"  # orchestrator -> one worker of the assigned role (the SubTaskQueue)
    RESULT = "result"  # worker -> the orchestrator that sent the sub-task (the ResultsQueue)


FINAL_ANSWER_TAG = "final_answer"
NETWORK_SRC = "network"


# --- packets ----------------------------------------------------------------------------------
def _type_required(schema: dict[str, Any]) -> None:
    # ``type`` has a default only so that Python code can build a packet without naming it; on
    # the wire it is the discriminator, without which no packet is read (parse_packet).
    if "type" in schema.get("properties", {}):
        schema["required"] = ["type", *(f for f in schema.get("required", []) if f != "type")]


class Envelope(BaseModel):
    """The fields every packet has; subclasses fix ``type`` and the payload model."""

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=_type_required)

    # Run ids name workspace folders: letters, digits, '-' and '_' only, so no path escapes.
    run_id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$", description="The run it belongs to.")
    src: str = Field(
        min_length=1, max_length=64, description="Its sender: a node id, or 'network' for the relay."
    )
    seq: int = Field(ge=0, description="The sender's sequence number in the run.")
    tag: str | None = Field(default=None, description="'final_answer' on the answer.")
    question: str = Field(default="", description="The question the run answers.")
    # The model server's own token counts for this step; null when it gave none (not 0).
    token_used: int | None = Field(
        default=0, ge=0, description="The model's tokens for this step (null: not reported)."
    )
    # No model time: it is the agent's measurement, not a message, and on the wire it made a
    # protocol's byte count depend on how long the model took. Each agent keeps it in its
    # memory.json, by the seq of the packet its step emitted (evaluation/modeltime.py).

    def to_dict(self) -> dict[str, Any]:
        """The packet as the plain dict every protocol adapter encodes."""
        return self.model_dump(mode="json")


class DocInitPacket(Envelope):
    """The relay's broadcast at t=0: the document in chunks and the question."""

    type: Literal[PacketType.DOC_INIT] = PacketType.DOC_INIT
    payload: DocInit


class SearchDocsPacket(Envelope):
    """search's answer: the passages retrieved for the question."""

    type: Literal[PacketType.SEARCH_DOCS] = PacketType.SEARCH_DOCS
    payload: SearchDocs


class EventsPacket(Envelope):
    """extract's answer: candidate facts for the question."""

    type: Literal[PacketType.EVENTS] = PacketType.EVENTS
    payload: Events


class TriplesPacket(Envelope):
    """triple's answer: subject-relation-object triples read from the facts."""

    type: Literal[PacketType.TRIPLES] = PacketType.TRIPLES
    payload: Triples


class DataEventPacket(Envelope):
    """The answer (tag 'final_answer'), with how it was found."""

    type: Literal[PacketType.DATA_EVENT] = PacketType.DATA_EVENT
    payload: FinalAnswer


class ErrorPacket(Envelope):
    """An agent's report that its tool failed on a packet."""

    type: Literal[PacketType.ERROR] = PacketType.ERROR
    payload: ToolFailure


class SubTaskPacket(Envelope):
    """One step of a plan, for a worker of the assigned role."""

    type: Literal[PacketType.SUBTASK] = PacketType.SUBTASK
    payload: SubTask


class ResultPacket(Envelope):
    """A worker's result for one sub-task, to the agent that sent it."""

    type: Literal[PacketType.RESULT] = PacketType.RESULT
    payload: SubTaskResult


Packet = Annotated[
    DocInitPacket
    | SearchDocsPacket
    | EventsPacket
    | TriplesPacket
    | DataEventPacket
    | ErrorPacket
    | SubTaskPacket
    | ResultPacket,
    Field(discriminator="type"),
]
PACKET: TypeAdapter[Packet] = TypeAdapter(Packet)
# Each packet type's model (the envelope with that type's payload model), read off the union.
PACKET_MODELS: dict[PacketType, type[Envelope]] = {
    model.model_fields["type"].default: model for model in get_args(get_args(Packet)[0])
}


class _Schema(GenerateJsonSchema):
    """Pydantic's JSON schema without a title on each field (its name again, capitalised): each
    protocol's first request carries the schemas, so they carry nothing twice."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def packet_schema(types: Iterable[str]) -> dict[str, Any]:
    """The JSON schema of one packet of any of ``types`` (packet type names): each type's model,
    the envelope with that type's payload model, picked by ``type``. Self-contained: the models
    it refers to are in its ``$defs``. What an agent's endpoints publish of what they take and
    emit, so that a client written elsewhere can build a packet the agent reads."""
    models = tuple(PACKET_MODELS[PacketType(t)] for t in sorted(set(types)))
    if not models:
        raise ValueError("a packet schema needs at least one packet type")
    if len(models) == 1:
        return models[0].model_json_schema(schema_generator=_Schema)
    union: Any = Annotated[Union[models], Field(discriminator="type")]  # noqa: UP007 (a tuple of types)
    return TypeAdapter(union).json_schema(schema_generator=_Schema)


def _frame_error(exc: ValidationError, blob: bytes | None = None, data: Any = None) -> FrameError:
    """A precise message for the first thing wrong with a frame."""
    first = exc.errors()[0]
    kind = first["type"]
    if kind == "json_invalid":
        return FrameError(f"json frame: malformed JSON ({first['msg'].removeprefix('Invalid JSON: ')})")
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        if blob is not None:
            data = json.loads(blob)  # valid JSON here; parsed again only to quote the type
        tag = data.get("type") if isinstance(data, dict) else None
        return FrameError(f"unknown packet type {tag!r}" if tag is not None else "packet has no 'type'")
    if not first["loc"]:
        return FrameError(f"packet must be a JSON object ({first['msg']})")
    loc = [str(p) for p in first["loc"][1:]]  # loc[0] is the union tag
    return FrameError(f"invalid packet field {'.'.join(loc) or 'packet'!r}: {first['msg']}")


def parse_packet(data: Any) -> Packet:
    """Validate a decoded dict; raises :class:`FrameError` naming what is wrong."""
    if not isinstance(data, dict):
        raise FrameError(f"packet must be an object, got {type(data).__name__}")
    try:
        return PACKET.validate_python(data)
    except ValidationError as exc:
        raise _frame_error(exc, data=data) from exc


def parse_packet_json(blob: bytes) -> Packet:
    """Decode and validate a JSON frame in one pass (the relay's hot path for ``json``)."""
    try:
        return PACKET.validate_json(blob)
    except ValidationError as exc:
        raise _frame_error(exc, blob=blob) from exc


def make_packet(ptype: PacketType, payload: Body | dict[str, Any], **envelope: Any) -> Packet:
    """Build a packet of type ``ptype``; the payload is validated against that type's model."""
    return parse_packet({"type": ptype.value, "payload": payload, **envelope})


def chunk_document(doc: str, size: int = 400) -> list[str]:
    """Split a document into consecutive ``size``-character chunks (the seed's doc_init)."""
    if size <= 0:
        raise ValueError("chunk size must be positive")
    return [doc[i : i + size] for i in range(0, len(doc), size)]


def doc_init(
    run_id: str, doc: str, question: str, chunk_size: int = 400, history: list[Turn] | None = None
) -> DocInitPacket:
    """The t=0 broadcast: the document in fixed-size chunks, the question, and the conversation's
    earlier turns when there are any."""
    return DocInitPacket(
        run_id=run_id,
        src=NETWORK_SRC,
        seq=0,
        question=question,
        payload=DocInit(chunks=chunk_document(doc, chunk_size), history=history or None),
    )


# --- announcement -----------------------------------------------------------------------------
# An agent says who it is in its WebSocket handshake response, so the relay learns its topic
# table from the agents themselves (and never imports the tools). Not a frame: not counted.
HEADER_NODE = "X-Gaiamesh-Node"
HEADER_TOOL = "X-Gaiamesh-Tool"
HEADER_CONSUMES = "X-Gaiamesh-Consumes"
HEADER_READS = "X-Gaiamesh-Reads"
HEADER_BACKEND = "X-Gaiamesh-Backend"
HEADER_MODEL_KIND = "X-Gaiamesh-Model-Kind"
HEADER_SCHEMAS = "X-Gaiamesh-Schemas"
HEADER_ANSWER_CHOICE = "X-Gaiamesh-Answer-Choice"
HEADER_PASSAGE_MS = "X-Gaiamesh-Scored-Passage-Ms"
HEADER_ANSWER_CHOICE_WHY = "X-Gaiamesh-Answer-Choice-Why"


class Announcement(BaseModel):
    """What an agent announces when the relay connects: its node id, its tool, the packet types
    it works on (``consumes``: one replica of a tool gets each) and those it only reads
    (``reads``: every replica gets them, e.g. a worker reads ``doc_init``); and the model it
    asks: its backend and kind, as found when the agent started (empty when not yet known),
    and whether the output it parses is held to JSON schemas; an agent whose tool scores
    continuations, its answer choice (likelihood or weights), what one scored passage was
    measured to cost at start-up (ms) and why it chose so."""

    model_config = ConfigDict(frozen=True)

    node_id: str
    tool: str
    consumes: frozenset[str]
    reads: frozenset[str] = frozenset()
    backend: str = ""
    model_kind: str = ""
    schemas: bool = False
    answer_choice: Literal["", "likelihood", "weights"] = ""
    passage_ms: float | None = None
    answer_choice_why: str = ""

    def headers(self) -> dict[str, str]:
        headers = {
            HEADER_NODE: self.node_id,
            HEADER_TOOL: self.tool,
            HEADER_CONSUMES: ",".join(sorted(self.consumes)),
        }
        if self.reads:
            headers[HEADER_READS] = ",".join(sorted(self.reads))
        if self.backend:
            headers[HEADER_BACKEND], headers[HEADER_MODEL_KIND] = self.backend, self.model_kind
        if self.schemas:
            headers[HEADER_SCHEMAS] = "true"
        if self.answer_choice:
            headers[HEADER_ANSWER_CHOICE] = self.answer_choice
            headers[HEADER_ANSWER_CHOICE_WHY] = self.answer_choice_why
        if self.passage_ms is not None:
            headers[HEADER_PASSAGE_MS] = repr(self.passage_ms)
        return headers

    @classmethod
    def from_headers(cls, headers: Any) -> Announcement | None:
        """The announcement in handshake ``headers``, or None when the agent sent none; a
        FrameError names a header that does not read as its field."""
        tool = headers.get(HEADER_TOOL)
        if tool is None:
            return None
        consumes = headers.get(HEADER_CONSUMES, "")
        reads = headers.get(HEADER_READS, "")
        try:
            return cls._from_values(headers, tool, consumes, reads)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise FrameError(
                f"agent {headers.get(HEADER_NODE, '')!r} announces {first['loc'][0]}={first['input']!r}: {first['msg']}"
            ) from exc

    @classmethod
    def _from_values(cls, headers: Any, tool: str, consumes: str, reads: str) -> Announcement:
        return cls(
            node_id=headers.get(HEADER_NODE, ""),
            tool=tool,
            consumes=frozenset(t for t in consumes.split(",") if t),
            reads=frozenset(t for t in reads.split(",") if t),
            backend=headers.get(HEADER_BACKEND, ""),
            model_kind=headers.get(HEADER_MODEL_KIND, ""),
            schemas=headers.get(HEADER_SCHEMAS) == "true",
            answer_choice=headers.get(HEADER_ANSWER_CHOICE, ""),
            passage_ms=headers.get(HEADER_PASSAGE_MS),
            answer_choice_why=headers.get(HEADER_ANSWER_CHOICE_WHY, ""),
        )
