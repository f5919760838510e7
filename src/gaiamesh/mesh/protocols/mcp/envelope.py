"""``mcp``: every packet is the JSON-RPC 2.0 ``tools/call`` request an MCP client would send.

``params.name`` is the packet's type (the relay routes by topic, so the "tool" is the topic, not
one agent's tool) and ``params.arguments`` is ``{"packet": <the packet object>}``: the packet
rides as JSON, not as a string, so its bytes in the frame are its canonical JSON. The request is
built and read with the official ``mcp`` SDK's types (``mcp.types``): ``CallToolRequest`` for
the method and params, ``JSONRPCRequest`` for the envelope. The SDK's models ignore members
they do not know; decoding here is strict and refuses them, and the members of ``params`` the
SDK knows but a mesh frame never uses (``_meta``, ``task``, ``inputResponses``,
``requestState``), before the SDK's model reads what is left. The id is a UUID, so every frame of a packet has the same size.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from mcp import types as mcp_types
from pydantic import ConfigDict, ValidationError

from ...frames import Envelope
from ..base import ProtocolAdapter, ProtocolError, canonical_json, loads_object

METHOD = "tools/call"
ARGUMENT = "packet"


class _StrictRequest(mcp_types.JSONRPCRequest):
    model_config = ConfigDict(extra="forbid")


_USED = {"name", "arguments"}  # the params members a mesh frame carries
_KNOWN = {field.alias or name for name, field in mcp_types.CallToolRequestParams.model_fields.items()}


def _first_error(exc: ValidationError, where: str) -> str:
    first = exc.errors()[0]
    loc = ".".join(str(x) for x in (where, *first["loc"]))
    return f"{loc}: {first['msg']}"


class McpAdapter(ProtocolAdapter):
    name = "mcp"

    def encode(self, packet: dict[str, Any]) -> bytes:
        # The packet's members in canonical (sorted) order, so it rides as its canonical JSON.
        arguments = {ARGUMENT: json.loads(canonical_json(packet))}
        call = mcp_types.CallToolRequest(
            params=mcp_types.CallToolRequestParams(name=str(packet.get("type", "")), arguments=arguments)
        )
        request = mcp_types.JSONRPCRequest(
            jsonrpc="2.0",
            id=str(uuid.uuid4()),
            method=call.method,
            params=call.params.model_dump(by_alias=True, mode="json", exclude_none=True),
        )
        envelope = request.model_dump(mode="json", exclude_none=True)
        return json.dumps(envelope, separators=(",", ":"), ensure_ascii=False).encode()

    def decode(self, blob: bytes) -> dict[str, Any]:
        raw = loads_object(blob, "mcp")
        try:
            request = _StrictRequest.model_validate(raw)
        except ValidationError as exc:
            raise ProtocolError(f"mcp: not a JSON-RPC 2.0 request ({_first_error(exc, 'request')})") from None
        if request.method != METHOD:
            raise ProtocolError(f"mcp: unsupported method {request.method!r} (expected {METHOD!r})")
        if request.params is None:
            raise ProtocolError("mcp: tools/call without params")
        unknown = sorted(set(request.params) - _KNOWN)
        if unknown:
            raise ProtocolError(f"mcp: params has unknown members {unknown}")
        unused = sorted(set(request.params) - _USED)
        if unused:
            raise ProtocolError(f"mcp: params members {unused} are not used by a mesh frame")
        try:
            params = mcp_types.CallToolRequestParams.model_validate(
                request.params, by_alias=True, by_name=False
            )
        except ValidationError as exc:
            raise ProtocolError(
                f"mcp: params is not a valid CallToolRequestParams ({_first_error(exc, 'params')})"
            ) from None
        arguments = params.arguments or {}
        if set(arguments) != {ARGUMENT}:
            raise ProtocolError(
                f"mcp: arguments must be exactly {{{ARGUMENT!r}: <packet>}}, got members {sorted(arguments)}"
            )
        packet = arguments[ARGUMENT]
        if not isinstance(packet, dict):
            raise ProtocolError(
                f"mcp: arguments.{ARGUMENT} must be a JSON object, got {type(packet).__name__}"
            )
        if params.name != packet.get("type"):
            raise ProtocolError(f"mcp: tool name {params.name!r} is not the packet's topic")
        return packet

    def header_size(self, packet: dict[str, Any]) -> int:
        # Everything beyond the bare packet: the JSON-RPC envelope, the method, the tool's name
        # and the arguments object around the packet. Ids are UUIDs, so the size is exact.
        return len(self.encode(packet)) - len(canonical_json(packet))

    def header_bytes(self, blob: bytes, packet: Envelope) -> int:
        return len(blob) - len(canonical_json(packet.to_dict()))
