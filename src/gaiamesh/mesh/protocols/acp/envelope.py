"""``acp``: every packet is an ACP (Agent Communication Protocol) run-create request.

The frame is the JSON body ACP's ``POST /runs`` takes (``RunCreateRequest``): ``agent_name``,
``session_id``, ``mode`` and ``input``, one ``Message`` whose single ``MessagePart`` (content type
``application/json``) carries the packet. The models below mirror the ``acp-sdk`` pydantic
models field for field, so that relay mode does not load the SDK (it brings a server stack:
OpenTelemetry exporters, PostgreSQL and Redis clients, object stores); the native wire,
``binding.py`` beside this one, uses the SDK itself. Mapping: the relay routes by topic, so
``agent_name`` is the packet's type (the topic, not one agent); ``session_id`` is a UUID derived
from the run; the role is ``user`` for the relay and ``agent/<node>`` for an agent; ``mode`` is
``async`` (a frame is sent, not awaited). Decoding is strict: unknown members, a second part or
input message, a wrong topic, session or role are rejected.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ...frames import NETWORK_SRC, Envelope
from ..base import ProtocolAdapter, ProtocolError, canonical_json, loads_object

MEDIA_TYPE = "application/json"
_ROLE_SUFFIX = re.compile(r"^[a-zA-Z0-9_\-]+$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MessagePart(_Strict):
    """``acp_sdk.models.MessagePart`` for inline content (no URL, no citation/trajectory metadata)."""

    name: str | None = None
    content_type: str | None = "text/plain"
    content: str | None = None
    content_encoding: Literal["plain"] | None = "plain"
    content_url: None = None
    metadata: None = None


class Message(_Strict):
    """``acp_sdk.models.Message``."""

    role: str = Field("user", pattern=r"^(user|agent(\/[a-zA-Z0-9_\-]+)?)$")
    parts: list[MessagePart]
    created_at: datetime | None = None
    completed_at: datetime | None = None


class RunCreateRequest(_Strict):
    """``acp_sdk.models.RunCreateRequest`` (an inline ``session`` object is not used)."""

    agent_name: str
    session_id: uuid.UUID | None = None
    session: None = None
    input: list[Message]
    mode: Literal["sync", "async", "stream"] = "sync"


def session_of(run_id: str) -> uuid.UUID:
    """The ACP session of a mesh run: a name-based UUID, the same at every endpoint."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"gaiamesh:run:{run_id}")


def role_of(src: str) -> str:
    if src == NETWORK_SRC:
        return "user"
    return f"agent/{src}" if _ROLE_SUFFIX.match(src) else "agent"


class AcpAdapter(ProtocolAdapter):
    name = "acp"

    def encode(self, packet: dict[str, Any]) -> bytes:
        # The SDK stamps both; this message is complete when made. To the second: a fixed-length
        # stamp, so header_size is exact.
        now = datetime.now(UTC).replace(microsecond=0)
        part = MessagePart(content_type=MEDIA_TYPE, content=canonical_json(packet).decode())
        message = Message(role=role_of(str(packet.get("src", ""))), parts=[part], created_at=now, completed_at=now)
        request = RunCreateRequest(
            agent_name=str(packet.get("type", "")),
            session_id=session_of(str(packet.get("run_id", ""))),
            input=[message],
            mode="async",
        )
        return request.model_dump_json(exclude_none=True).encode()

    def decode(self, blob: bytes) -> dict[str, Any]:
        try:
            request = RunCreateRequest.model_validate(loads_object(blob, "acp"))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(x) for x in first["loc"]) or "request"
            raise ProtocolError(f"acp: not a valid RunCreateRequest ({where}: {first['msg']})") from None
        if len(request.input) != 1 or len(request.input[0].parts) != 1:
            raise ProtocolError("acp: expected one input message with one part carrying the packet")
        message, part = request.input[0], request.input[0].parts[0]
        if part.content_type != MEDIA_TYPE or part.content is None:
            raise ProtocolError(f"acp: the message part must carry {MEDIA_TYPE} content inline")
        packet = loads_object(part.content.encode(), "acp message part")
        if request.agent_name != packet.get("type"):
            raise ProtocolError(f"acp: agent_name {request.agent_name!r} is not the packet's topic")
        if request.session_id != session_of(str(packet.get("run_id", ""))):
            raise ProtocolError("acp: session_id is not the packet's run")
        if message.role != role_of(str(packet.get("src", ""))):
            raise ProtocolError(f"acp: role {message.role!r} does not match the packet's src")
        return packet

    def header_size(self, packet: dict[str, Any]) -> int:
        # Everything beyond the bare packet: the request and message envelope (topic, session,
        # role, timestamps) and the escaping of the packet as a JSON string inside the part.
        return len(self.encode(packet)) - len(canonical_json(packet))

    def header_bytes(self, blob: bytes, packet: Envelope) -> int:
        return len(blob) - len(canonical_json(packet.to_dict()))
