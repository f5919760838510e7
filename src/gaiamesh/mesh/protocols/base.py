"""The pluggable wire protocol: how a packet dict becomes bytes and back."""

from __future__ import annotations

import abc
import copy
import json
from typing import Any, Self

from ..frames import Envelope, FrameError, Packet, parse_packet
from ..freshness import Freshness


class ProtocolError(FrameError):
    """Bytes an adapter cannot decode (bad framing, checksum, signature, envelope...)."""


def canonical_json(packet: dict[str, Any]) -> bytes:
    """The bare payload every adapter carries: compact, key-sorted UTF-8 JSON of the packet."""
    return json.dumps(packet, separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode()


class ProtocolAdapter(abc.ABC):
    """Encodes and decodes packets.

    ``header_size(packet)`` is the number of bytes the protocol adds on the wire beyond the
    packet's bare payload, i.e. ``len(encode(packet)) - len(body)``, where ``body`` is the
    packet content as the protocol carries it (for JSON, the whole frame, so 0).
    """

    name: str = "base"
    fresh: Freshness | None = None
    """The replay window and nonce cache of an adapter that signs the time and a nonce (``signed``,
    ``anp``); None: it checks neither (a protocol that signs nothing, or the window set to 0)."""

    @abc.abstractmethod
    def encode(self, packet: dict[str, Any]) -> bytes:
        """Encode a packet dict into one wire frame."""

    @abc.abstractmethod
    def decode(self, blob: bytes) -> dict[str, Any]:
        """Decode one wire frame; raises :class:`ProtocolError` on anything malformed."""

    @abc.abstractmethod
    def header_size(self, packet: dict[str, Any]) -> int:
        """Protocol bytes added beyond the bare payload when ``packet`` is encoded."""

    def decode_packet(self, blob: bytes) -> Packet:
        """Decode one frame and validate it as a typed packet (the relay's and agents' edge)."""
        return parse_packet(self.decode(blob))

    def header_bytes(self, blob: bytes, packet: Envelope) -> int:
        """``header_size`` of a frame already encoded as ``blob`` (adapters with a fixed or
        blob-derived header answer without re-encoding)."""
        return self.header_size(packet.to_dict())

    def with_replay_window(self, window_s: float) -> Self:
        """This adapter, refusing stale and replayed frames (``REPLAY_WINDOW_S``; 0 turns it off)."""
        self.fresh = Freshness(window_s) if window_s > 0 else None
        return self

    def per_connection(self) -> Self:
        """A copy with a nonce cache of its own, for one connection: after a lost connection the
        relay sends its work in flight again, the same bytes, and a new connection takes them."""
        if self.fresh is None:
            return self
        other = copy.copy(self)
        other.fresh = self.fresh.fresh_copy()
        return other

    def check_fresh(self, signer: str, nonce: bytes, made_s: float) -> None:
        """Refuse a frame ``signer`` made at ``made_s`` with ``nonce`` if it is stale or seen."""
        if self.fresh is not None and (why := self.fresh.refusal(signer, nonce, made_s)):
            raise ProtocolError(f"{self.name}: {why}")


def loads_object(data: bytes, what: str) -> dict[str, Any]:
    """Parse JSON bytes that must hold an object, with a precise error otherwise."""
    try:
        text = data.decode("utf-8")  # explicit: json.loads(bytes) would guess UTF-16/32 too
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"{what}: not UTF-8 ({exc.reason} at byte {exc.start})") from exc
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProtocolError(
            f"{what}: malformed JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from exc
    except RecursionError as exc:
        raise ProtocolError(f"{what}: JSON nested too deeply") from exc
    if not isinstance(obj, dict):
        raise ProtocolError(f"{what}: expected a JSON object, got {type(obj).__name__}")
    return obj
