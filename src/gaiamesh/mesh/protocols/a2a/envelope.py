"""``a2a``: every packet is an A2A 1.0 JSON-RPC 2.0 ``SendMessage`` request.

``params`` is a ``SendMessageRequest`` built and serialized with the official ``a2a-sdk`` types
(protobuf, through ``google.protobuf.json_format``); the message's ``contextId`` is the run, and
one ``text`` part (media type ``application/json``) carries the packet. Decoding parses
``params`` strictly with the same types, so unknown fields are rejected.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from a2a import types as a2a_types
from google.protobuf import json_format

from ...frames import NETWORK_SRC
from ..base import ProtocolAdapter, ProtocolError, canonical_json, loads_object

METHOD = "SendMessage"
MEDIA_TYPE = "application/json"


class A2AAdapter(ProtocolAdapter):
    name = "a2a"

    def encode(self, packet: dict[str, Any]) -> bytes:
        message = a2a_types.Message(
            message_id=str(uuid.uuid4()),
            context_id=str(packet.get("run_id", "")),
            role=a2a_types.Role.ROLE_USER if packet.get("src") == NETWORK_SRC else a2a_types.Role.ROLE_AGENT,
            parts=[a2a_types.Part(text=canonical_json(packet).decode(), media_type=MEDIA_TYPE)],
        )
        params = json_format.MessageToDict(a2a_types.SendMessageRequest(message=message))
        envelope = {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": METHOD, "params": params}
        return json.dumps(envelope, separators=(",", ":"), ensure_ascii=False).encode()

    def decode(self, blob: bytes) -> dict[str, Any]:
        envelope = loads_object(blob, "a2a")
        if envelope.get("jsonrpc") != "2.0":
            raise ProtocolError("a2a: not a JSON-RPC 2.0 request (jsonrpc != '2.0')")
        if envelope.get("method") != METHOD:
            raise ProtocolError(f"a2a: unsupported method {envelope.get('method')!r} (expected {METHOD!r})")
        if not isinstance(envelope.get("id"), str | int) or isinstance(envelope.get("id"), bool):
            raise ProtocolError("a2a: request id missing or not a string/number")
        extra = set(envelope) - {"jsonrpc", "id", "method", "params"}
        if extra:
            raise ProtocolError(f"a2a: unexpected JSON-RPC members {sorted(extra)}")
        params = envelope.get("params")
        if not isinstance(params, dict):
            raise ProtocolError("a2a: params must be an object")
        try:
            request = json_format.ParseDict(
                params, a2a_types.SendMessageRequest(), ignore_unknown_fields=False
            )
        except json_format.ParseError as exc:
            raise ProtocolError(f"a2a: params is not a valid SendMessageRequest ({exc})") from exc
        texts = [p.text for p in request.message.parts if p.WhichOneof("content") == "text"]
        if len(texts) != 1:
            raise ProtocolError(f"a2a: expected one text part carrying the packet, found {len(texts)}")
        packet = loads_object(texts[0].encode(), "a2a text part")
        if request.message.context_id != str(packet.get("run_id", "")):
            raise ProtocolError("a2a: message contextId is not the packet's run")
        return packet

    def header_size(self, packet: dict[str, Any]) -> int:
        # Everything beyond the bare packet: the JSON-RPC and A2A envelope, and the escaping of
        # the packet as a JSON string inside the text part. Ids are UUIDs, so the size is exact.
        return len(self.encode(packet)) - len(canonical_json(packet))
