"""``agora``: every packet is an Agora message under a protocol document that describes it.

Agora names a protocol by the hash of its protocol document: base64 of the SHA-1 of the
document's UTF-8 text, as ``agora.utils.compute_hash`` computes it. A message is the JSON object
the Agora SDK posts: ``protocolHash``, ``protocolSources`` (where the document can be had) and
``body`` (a string: the packet as JSON). Our document ships with the package
(``documents/agora-gaiamesh-packet.md``) and is published nowhere, so, as the SDK's sender does
for a protocol without sources, the one source is the document itself as a ``data:`` URI.
Decoding checks the hash against our document and every ``data:`` source against the hash;
other sources are never fetched (every endpoint knows the document). The SDK itself
(LangChain, LangGraph, Flask) is a test dependency only; this envelope is small enough to write.
"""

from __future__ import annotations

import base64
import hashlib
import json
import urllib.parse
from importlib import resources
from typing import Any

from ...frames import Envelope
from ..base import ProtocolAdapter, ProtocolError, canonical_json, loads_object

DATA_URI = "data:text/plain;charset=utf-8,"
DATA_URI_B64 = "data:text/plain;charset=utf-8;base64,"
DOCUMENT = resources.files("gaiamesh.mesh.protocols.agora").joinpath("documents/agora-gaiamesh-packet.md").read_text("utf-8")


def protocol_hash(document: str) -> str:
    """Agora's protocol hash: base64(SHA-1(UTF-8 text))."""
    return base64.b64encode(hashlib.sha1(document.encode()).digest()).decode("ascii")


PROTOCOL_HASH = protocol_hash(DOCUMENT)
SOURCES = [DATA_URI + urllib.parse.quote(DOCUMENT)]  # as agora.utils.encode_as_data_uri does


def _source_document(source: str) -> str | None:
    """The document a ``data:`` source holds (None for a URL, which is not fetched)."""
    try:
        if source.startswith(DATA_URI_B64):
            return base64.b64decode(source[len(DATA_URI_B64) :], validate=True).decode("utf-8")
        if source.startswith(DATA_URI):
            return urllib.parse.unquote(source[len(DATA_URI) :], errors="strict")
    except (ValueError, UnicodeDecodeError) as exc:  # binascii.Error is a ValueError
        raise ProtocolError(f"agora: unreadable data: protocol source ({exc})") from exc
    if source.startswith("data:"):
        raise ProtocolError("agora: unsupported data: protocol source (not text/plain;charset=utf-8)")
    return None


class AgoraAdapter(ProtocolAdapter):
    name = "agora"

    def encode(self, packet: dict[str, Any]) -> bytes:
        message = {"protocolHash": PROTOCOL_HASH, "protocolSources": SOURCES, "body": canonical_json(packet).decode()}
        return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()

    def decode(self, blob: bytes) -> dict[str, Any]:
        message = loads_object(blob, "agora")
        missing = {"protocolHash", "protocolSources", "body"} - set(message)
        extra = set(message) - {"protocolHash", "protocolSources", "body", "multiround"}
        if missing or extra:
            raise ProtocolError(f"agora: missing members {sorted(missing)}, unexpected members {sorted(extra)}")
        if message.get("multiround", False) is not False:
            raise ProtocolError("agora: multiround conversations are not part of this protocol")
        if message["protocolHash"] != PROTOCOL_HASH:
            got = str(message["protocolHash"])[:64]
            raise ProtocolError(f"agora: unknown protocol hash {got!r} (expected {PROTOCOL_HASH!r})")
        sources = message["protocolSources"]
        if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
            raise ProtocolError("agora: protocolSources must be a list of strings")
        for source in sources:
            document = _source_document(source)
            if document is not None and protocol_hash(document) != PROTOCOL_HASH:
                raise ProtocolError("agora: a protocol source does not match protocolHash")
        if not isinstance(message["body"], str):
            raise ProtocolError("agora: body must be a string")
        return loads_object(message["body"].encode(), "agora body")

    def header_size(self, packet: dict[str, Any]) -> int:
        # Everything beyond the bare packet: the hash, the sources (the document, inline) and
        # the escaping of the packet as a JSON string in the body.
        return len(self.encode(packet)) - len(canonical_json(packet))

    def header_bytes(self, blob: bytes, packet: Envelope) -> int:
        return len(blob) - len(canonical_json(packet.to_dict()))
