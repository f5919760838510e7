"""Typed packets: what agents and the relay say to each other, validated once at the edge."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class PacketType(StrEnum):
    """Every packet type on the mesh. Unknown types are rejected at the edge."""

    DOC_INIT = "doc_init"  # relay -> all agents at t=0: document chunks and the question
    SEARCH_DOCS = "search_docs"  # search -> retrieved passages
    EVENTS = "events"  # extract -> candidate facts
    TRIPLES = "triples"  # triple -> subject/relation/object triples
    DATA_EVENT = "data_event"  # reason -> tag=final_answer
    ERROR = "error"  # an agent reports that its tool failed


FINAL_ANSWER_TAG = "final_answer"
NETWORK_SRC = "network"


class FrameError(ValueError):
    """A frame that cannot be accepted: malformed, oversized, badly signed or of an unknown type."""


class Packet(BaseModel):
    """One mesh packet. ``payload`` holds the tool's output; the rest is envelope."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: PacketType
    run_id: str = Field(min_length=1, max_length=64)
    src: str = Field(min_length=1, max_length=64)
    seq: int = Field(ge=0)
    tag: str | None = None
    question: str = ""
    payload: dict[str, Any] = Field(default_factory=dict)
    token_used: int = Field(default=0, ge=0)
    llm_ms: float = Field(default=0.0, ge=0)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    @classmethod
    def parse(cls, data: Any) -> Packet:
        """Validate a decoded dict; raises :class:`FrameError` naming what is wrong."""
        if not isinstance(data, dict):
            raise FrameError(f"packet must be an object, got {type(data).__name__}")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "packet"
            if where == "type":
                raise FrameError(f"unknown packet type {data.get('type')!r}") from exc
            raise FrameError(f"invalid packet field {where!r}: {first['msg']}") from exc


def chunk_document(doc: str, size: int = 400) -> list[str]:
    """Split a document into consecutive ``size``-character chunks (the seed's doc_init)."""
    if size <= 0:
        raise ValueError("chunk size must be positive")
    return [doc[i : i + size] for i in range(0, len(doc), size)]


def doc_init(run_id: str, doc: str, question: str, chunk_size: int = 400) -> Packet:
    """The t=0 broadcast: the document in fixed-size chunks, plus the question."""
    return Packet(
        type=PacketType.DOC_INIT,
        run_id=run_id,
        src=NETWORK_SRC,
        seq=0,
        question=question,
        payload={"chunks": chunk_document(doc, chunk_size)},
    )
