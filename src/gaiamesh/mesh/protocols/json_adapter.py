"""The baseline: the packet as compact JSON, nothing else on the wire."""

from __future__ import annotations

from typing import Any

from ..frames import Envelope, Packet, parse_packet_json
from .base import ProtocolAdapter, canonical_json, loads_object


class JsonAdapter(ProtocolAdapter):
    name = "json"

    def encode(self, packet: dict[str, Any]) -> bytes:
        return canonical_json(packet)

    def decode(self, blob: bytes) -> dict[str, Any]:
        return loads_object(blob, "json frame")

    def header_size(self, packet: dict[str, Any]) -> int:
        # The whole frame is the payload: JSON adds no separate header.
        return 0

    def decode_packet(self, blob: bytes) -> Packet:
        # One pass in pydantic-core: parse and validate without an intermediate dict.
        return parse_packet_json(blob)

    def header_bytes(self, blob: bytes, packet: Envelope) -> int:
        return 0
