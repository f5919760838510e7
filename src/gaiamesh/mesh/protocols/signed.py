"""``signed``: every frame signed with Ed25519, one key pair per endpoint.

Frame (version 2): magic ``b"GS"`` (2) | version (1) | signer id length (1) | signer id |
time made, ms since the epoch (8) | nonce (8) | signature (64) | canonical JSON payload. The
signature covers everything before it and the payload. Each endpoint signs with its own private
key (``KEYS_DIR/<node_id>.pem``) and verifies with the public keys it knows
(``KEYS_DIR/public.json``). A packet's ``src`` must be its signer. A receiver takes a frame once,
and only within its replay window (``REPLAY_WINDOW_S``, see ``mesh/freshness.py``); version 1,
which carried neither time nor nonce, is refused, so a frame cannot be downgraded to it.
"""

from __future__ import annotations

import json
import os
import secrets
import struct
import time
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ..frames import Envelope
from .base import ProtocolAdapter, ProtocolError, canonical_json, loads_object

MAGIC = b"GS"
VERSION = 2
PREFIX = struct.Struct(">2sBB")
STAMP = struct.Struct(">Q8s")  # time made (ms since the epoch), nonce
SIG = 64


class SigningKeyError(ProtocolError):
    """Keys missing or unreadable (a configuration error, reported before the run)."""


def generate_keys(keys_dir: Path, node_ids: list[str]) -> Path:
    """Write one Ed25519 key pair per node: ``<id>.pem`` (mode 0600) and ``public.json``."""
    keys_dir.mkdir(parents=True, exist_ok=True)
    public: dict[str, str] = {}
    for node in node_ids:
        key = Ed25519PrivateKey.generate()
        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        path = keys_dir / f"{node}.pem"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        public[node] = (
            key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw).hex()
        )
    (keys_dir / "public.json").write_text(json.dumps(public, indent=2))
    # The local CA, the relay's certificate for anp's DID host on its own wire (an agent's
    # process trusts it through SSL_CERT_FILE: deploy/local.py's child_env, compose), and each
    # node's certificate for the relay's wire under WIRE_TLS (wiretls.py).
    from ..localtls import issue_tls

    issue_tls(keys_dir, ["localhost", "network"], nodes=node_ids)
    return keys_dir


def load_keys(
    protocol: str, node_id: str, keys_dir: Path
) -> tuple[Ed25519PrivateKey, dict[str, Ed25519PublicKey]]:
    """This node's private key and everyone's public keys, as ``generate_keys`` wrote them
    (shared by every protocol that signs: ``signed`` and ``anp``)."""
    try:
        public = _public(keys_dir)
        pem = (keys_dir / f"{node_id}.pem").read_bytes()
        key = serialization.load_pem_private_key(pem, password=None)
    except (OSError, ValueError, AttributeError) as exc:
        raise SigningKeyError(
            f"{protocol}: cannot load keys for node {node_id!r} from {keys_dir}: {exc}"
        ) from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningKeyError(f"{protocol}: {keys_dir / (node_id + '.pem')} is not an Ed25519 key")
    return key, public


def load_public(protocol: str, keys_dir: Path) -> dict[str, Ed25519PublicKey]:
    """Everyone's public keys, from ``keys_dir/public.json``."""
    try:
        return _public(keys_dir)
    except (OSError, ValueError, AttributeError) as exc:
        raise SigningKeyError(f"{protocol}: cannot load the public keys from {keys_dir}: {exc}") from exc


def _public(keys_dir: Path) -> dict[str, Ed25519PublicKey]:
    # AttributeError: a public.json that is not a JSON object
    table = json.loads((keys_dir / "public.json").read_text())
    return {n: Ed25519PublicKey.from_public_bytes(bytes.fromhex(h)) for n, h in table.items()}


class SignedAdapter(ProtocolAdapter):
    name = "signed"

    def __init__(
        self, node_id: str, private_key: Ed25519PrivateKey | None, public_keys: dict[str, Ed25519PublicKey]
    ):
        self.node_id = node_id
        self._key = private_key
        self._public = public_keys
        self._id = node_id.encode()
        if len(self._id) > 255:
            raise ValueError("node id too long for the signed protocol")

    @classmethod
    def from_dir(cls, node_id: str, keys_dir: Path) -> SignedAdapter:
        """Load this node's private key and everyone's public keys from ``keys_dir``."""
        return cls(node_id, *load_keys("signed", node_id, keys_dir))

    def encode(self, packet: dict[str, Any]) -> bytes:
        if self._key is None:
            raise ProtocolError(f"signed: node {self.node_id!r} has no private key")
        payload = canonical_json(packet)
        head = PREFIX.pack(MAGIC, VERSION, len(self._id)) + self._id
        head += STAMP.pack(time.time_ns() // 1_000_000, secrets.token_bytes(8))
        return head + self._key.sign(head + payload) + payload

    def decode(self, blob: bytes) -> dict[str, Any]:
        if len(blob) < PREFIX.size:
            raise ProtocolError(f"signed: truncated frame ({len(blob)} bytes)")
        magic, version, id_len = PREFIX.unpack_from(blob)
        if magic != MAGIC:
            raise ProtocolError(f"signed: unsigned frame or bad magic {magic!r} (expected {MAGIC!r})")
        if version != VERSION:
            raise ProtocolError(f"signed: version {version} refused (this endpoint speaks {VERSION} only)")
        signed_end = PREFIX.size + id_len + STAMP.size
        body = signed_end + SIG
        if len(blob) < body:
            raise ProtocolError(f"signed: truncated frame ({len(blob)} bytes, header needs {body})")
        signer = blob[PREFIX.size : PREFIX.size + id_len].decode("utf-8", errors="replace")
        signature, payload = blob[signed_end:body], blob[body:]
        key = self._public.get(signer)
        if key is None:
            raise ProtocolError(f"signed: unknown signer {signer!r}")
        try:
            key.verify(signature, blob[:signed_end] + payload)
        except InvalidSignature:
            raise ProtocolError(f"signed: bad signature on a frame from {signer!r}") from None
        made_ms, nonce = STAMP.unpack_from(blob, PREFIX.size + id_len)
        self.check_fresh(signer, nonce, made_ms / 1000)
        packet = loads_object(payload, "signed")
        if packet.get("src") != signer:
            raise ProtocolError(f"signed: packet src {packet.get('src')!r} is not its signer {signer!r}")
        return packet

    def header_size(self, packet: dict[str, Any]) -> int:
        # The signer is the packet's src (checked on decode), so its id length is known.
        return PREFIX.size + len(str(packet.get("src", self.node_id)).encode()) + STAMP.size + SIG

    def header_bytes(self, blob: bytes, packet: Envelope) -> int:
        return PREFIX.size + len(packet.src.encode()) + STAMP.size + SIG
