"""``binary``: a fixed 13-byte header plus a msgpack payload.

Header (big-endian): magic ``b"GM"`` (2) | version (1) | packet type code (1) | flags (1) |
payload length (4) | CRC32 of the payload (4). Flag bit 0 marks a ``final_answer`` tag;
the other bits are reserved and must be zero.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any

import msgpack

from ..frames import FINAL_ANSWER_TAG, Envelope, PacketType
from .base import ProtocolAdapter, ProtocolError

MAGIC = b"GM"
VERSION = 1
HEADER = struct.Struct(">2sBBBII")
TYPE_CODES = {t.value: i for i, t in enumerate(PacketType, start=1)}
CODE_TYPES = {i: t for t, i in TYPE_CODES.items()}
FLAG_FINAL = 0x01


class BinaryAdapter(ProtocolAdapter):
    name = "binary"

    def encode(self, packet: dict[str, Any]) -> bytes:
        code = TYPE_CODES.get(str(packet.get("type")))
        if code is None:
            raise ProtocolError(f"binary: cannot encode unknown packet type {packet.get('type')!r}")
        payload = msgpack.packb(packet, use_bin_type=True)
        flags = FLAG_FINAL if packet.get("tag") == FINAL_ANSWER_TAG else 0
        return HEADER.pack(MAGIC, VERSION, code, flags, len(payload), zlib.crc32(payload)) + payload

    def decode(self, blob: bytes) -> dict[str, Any]:
        if len(blob) < HEADER.size:
            raise ProtocolError(f"binary: truncated frame ({len(blob)} bytes, header needs {HEADER.size})")
        magic, version, code, flags, length, crc = HEADER.unpack_from(blob)
        if magic != MAGIC:
            raise ProtocolError(f"binary: bad magic {magic!r} (expected {MAGIC!r})")
        if version != VERSION:
            raise ProtocolError(f"binary: unknown version {version} (this side speaks {VERSION})")
        if code not in CODE_TYPES:
            raise ProtocolError(f"binary: unknown packet type code {code}")
        if flags & ~FLAG_FINAL:
            # Reserved bits must be zero, or a corrupted header would pass unnoticed.
            raise ProtocolError(f"binary: unknown flag bits {flags & ~FLAG_FINAL:#04x}")
        payload = blob[HEADER.size :]
        if len(payload) != length:
            raise ProtocolError(
                f"binary: truncated frame (header says {length} payload bytes, got {len(payload)})"
            )
        if zlib.crc32(payload) != crc:
            raise ProtocolError(
                f"binary: CRC mismatch (header {crc:#010x}, payload {zlib.crc32(payload):#010x})"
            )
        try:
            packet = msgpack.unpackb(payload, raw=False, strict_map_key=True)
        except Exception as exc:  # msgpack raises many types for bad input; all mean the same here
            raise ProtocolError(f"binary: payload is not valid msgpack ({type(exc).__name__})") from exc
        if not isinstance(packet, dict):
            raise ProtocolError(f"binary: payload must be a map, got {type(packet).__name__}")
        if packet.get("type") != CODE_TYPES[code]:
            raise ProtocolError(
                f"binary: header type {CODE_TYPES[code]!r} disagrees with payload {packet.get('type')!r}"
            )
        if bool(flags & FLAG_FINAL) != (packet.get("tag") == FINAL_ANSWER_TAG):
            raise ProtocolError("binary: final-answer flag disagrees with the payload tag")
        return packet

    def header_size(self, packet: dict[str, Any]) -> int:
        return HEADER.size

    def header_bytes(self, blob: bytes, packet: Envelope) -> int:
        return HEADER.size
