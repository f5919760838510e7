"""``compressed``: zlib-compressed canonical JSON behind an 8-byte header.

Header (big-endian): magic ``b"GZ"`` (2) | version (1) | codec (1, 1 = zlib) | uncompressed
length (4). Decompression is capped at the declared length, so a small frame cannot expand
without bound, and the length is checked.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any

from ..frames import Envelope
from .base import ProtocolAdapter, ProtocolError, canonical_json, loads_object

MAGIC = b"GZ"
VERSION = 1
CODEC_ZLIB = 1
HEADER = struct.Struct(">2sBBI")
MAX_UNCOMPRESSED = 64 * 1024 * 1024


class CompressedAdapter(ProtocolAdapter):
    name = "compressed"

    def __init__(self, level: int = 6) -> None:
        self.level = level

    def encode(self, packet: dict[str, Any]) -> bytes:
        raw = canonical_json(packet)
        return HEADER.pack(MAGIC, VERSION, CODEC_ZLIB, len(raw)) + zlib.compress(raw, self.level)

    def decode(self, blob: bytes) -> dict[str, Any]:
        if len(blob) < HEADER.size:
            raise ProtocolError(
                f"compressed: truncated frame ({len(blob)} bytes, header needs {HEADER.size})"
            )
        magic, version, codec, length = HEADER.unpack_from(blob)
        if magic != MAGIC:
            raise ProtocolError(f"compressed: bad magic {magic!r} (expected {MAGIC!r})")
        if version != VERSION:
            raise ProtocolError(f"compressed: unknown version {version}")
        if codec != CODEC_ZLIB:
            raise ProtocolError(f"compressed: unknown codec {codec}")
        if length > MAX_UNCOMPRESSED:
            raise ProtocolError(f"compressed: declared length {length} exceeds {MAX_UNCOMPRESSED}")
        inflater = zlib.decompressobj()
        try:
            raw = inflater.decompress(blob[HEADER.size :], length + 1)
        except zlib.error as exc:
            raise ProtocolError(f"compressed: corrupt zlib stream ({exc})") from exc
        if len(raw) != length or not inflater.eof:
            raise ProtocolError(
                f"compressed: length mismatch (header says {length} bytes, stream gives {len(raw)}+)"
            )
        if inflater.unused_data:
            raise ProtocolError(f"compressed: {len(inflater.unused_data)} trailing bytes after the stream")
        return loads_object(raw, "compressed")

    def header_size(self, packet: dict[str, Any]) -> int:
        return HEADER.size

    def header_bytes(self, blob: bytes, packet: Envelope) -> int:
        return HEADER.size
