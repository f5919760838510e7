"""``anp``: every packet is an ANP ``direct.send`` request, signed by its sender's did:wba.

Identity: each node's DID is an ANP ``e1`` did:wba, ``did:wba:gaiamesh.local:agents:<node>:e1_<fp>``,
whose last segment is the RFC 7638 fingerprint of the node's Ed25519 key. The keys are the
``signed`` protocol's (``gaiamesh keygen``, ``KEYS_DIR``): e1 is ANP's default profile and it is
Ed25519, so no secp256k1 keys are needed. DID documents are built locally from
``KEYS_DIR/public.json`` instead of being resolved over HTTPS.

Frame: a JSON-RPC 2.0 ``direct.send`` request (profile ``anp.direct.base.v1``) whose ``params``
are ``meta`` (sender and target DIDs, ids, content type), ``auth.origin_proof`` (ANP's RFC 9421
origin proof over the JCS-canonical ``{method, meta, body}``, made and checked by the ``anp``
SDK against the sender's DID document) and ``body`` (``conversation_id`` = the run, ``payload`` =
the packet as a JSON object). Agents' frames target the relay's DID; the relay's own frames,
which it fans out unchanged to several agents, target the mesh (kind ``group``).
"""

from __future__ import annotations

import json
import secrets
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote

from anp.authentication.did_wba import _build_ed25519_binding_entry, compute_multikey_fingerprint
from anp.proof import (
    Rfc9421OriginProofGenerationOptions,
    Rfc9421OriginProofVerificationOptions,
    generate_rfc9421_origin_proof,
    parse_im_signature_input,
    verify_rfc9421_origin_proof,
)
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ...frames import NETWORK_SRC, Envelope
from ...freshness import Freshness
from ..base import ProtocolAdapter, ProtocolError, canonical_json, loads_object
from ..signed import SigningKeyError, load_keys

DID_HOST = "gaiamesh.local"
MESH_DID = f"did:wba:{DID_HOST}:mesh"
METHOD = "direct.send"
SCHEME = "anp-rfc9421-origin-proof-v1"
FIXED_META = {
    "anp_version": "1.0",
    "profile": "anp.direct.base.v1",
    "security_profile": "transport-protected",
}
META_KEYS = {*FIXED_META, "sender_did", "target", "operation_id", "message_id", "content_type"}
PROOF_KEYS = {"contentDigest", "signatureInput", "signature"}


def did_document(node_id: str, key: Ed25519PublicKey) -> dict[str, Any]:
    """The node's e1 DID document: one Multikey, authorized for authentication."""
    did = f"did:wba:{DID_HOST}:agents:{quote(node_id, safe='')}:e1_{compute_multikey_fingerprint(key)}"
    method = _build_ed25519_binding_entry(did, key)  # the SDK's e1 entry (not exported)
    return {
        "@context": ["https://www.w3.org/ns/did/v1", "https://w3id.org/security/multikey/v1"],
        "id": did,
        "verificationMethod": [method],
        "authentication": [method["id"]],
        "assertionMethod": [method["id"]],
    }


def _members(obj: Any, keys: set[str], what: str) -> dict[str, Any]:
    """``obj`` as an object with exactly ``keys`` (ANP's shapes are closed here)."""
    if not isinstance(obj, dict):
        raise ProtocolError(f"anp: {what} must be an object")
    if set(obj) != keys:
        raise ProtocolError(f"anp: {what} has members {sorted(obj)}, expected {sorted(keys)}")
    return obj


def direct_send(
    packet: dict[str, Any], key: Ed25519PrivateKey, sender_did: str, target: dict[str, str]
) -> dict[str, Any]:
    """The JSON-RPC 2.0 ``direct.send`` request carrying ``packet``, with the sender's origin
    proof (the relay's envelope here, and the native wire's request body, client.py beside this one)."""
    mid = str(uuid.uuid4())
    meta = {**FIXED_META, "sender_did": sender_did, "target": target, "operation_id": mid, "message_id": mid,
            "content_type": "application/json"}  # fmt: skip
    body = {"conversation_id": str(packet.get("run_id", "")), "payload": packet}
    # created and nonce given, not left to the SDK: anp 1.0.7 otherwise draws a second nonce
    # for the signatureInput it returns, which then no longer matches what it signed.
    options = Rfc9421OriginProofGenerationOptions(created=int(time.time()), nonce=secrets.token_urlsafe(12))
    proof = generate_rfc9421_origin_proof(METHOD, meta, body, key, f"{sender_did}#key-1", options=options)
    params = {"meta": meta, "auth": {"scheme": SCHEME, "origin_proof": proof}, "body": body}
    return {"jsonrpc": "2.0", "id": mid, "method": METHOD, "params": params}


def read_params(params: Any) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """``direct.send``'s params as (meta, origin proof, body), each with exactly its members and
    the fixed profile; who signed it and for whom is the caller's to check."""
    params = _members(params, {"meta", "auth", "body"}, "params")
    meta = _members(params["meta"], META_KEYS, "meta")
    auth = _members(params["auth"], {"scheme", "origin_proof"}, "auth")
    body = _members(params["body"], {"conversation_id", "payload"}, "body")
    if any(meta[k] != v for k, v in FIXED_META.items()) or meta["content_type"] != "application/json":
        raise ProtocolError("anp: meta is not anp.direct.base.v1 / transport-protected / application/json")
    if auth["scheme"] != SCHEME:
        raise ProtocolError(f"anp: unsupported auth scheme {auth['scheme']!r}")
    return meta, _members(auth["origin_proof"], PROOF_KEYS, "origin_proof"), body


def verify_origin(
    proof: dict[str, Any], meta: dict[str, Any], body: dict[str, Any], doc: dict[str, Any],
    fresh: Freshness | None = None,
) -> None:
    """The SDK's check of an origin proof against the signer's DID document, then (``fresh``)
    ours of its ``created`` and ``nonce``: the SDK signs both but checks neither, and ANP asks a
    receiver to refuse a replayed message."""
    options = Rfc9421OriginProofVerificationOptions(expected_signer_did=doc["id"])
    try:
        verify_rfc9421_origin_proof(proof, METHOD, meta, body, did_document=doc, options=options)
        stamp = parse_im_signature_input(proof["signatureInput"])
    except InvalidSignature:
        raise ProtocolError(f"anp: bad signature on a frame from {doc['id']!r}") from None
    except (ValueError, TypeError) as exc:  # the SDK's ImProofError is a ValueError
        raise ProtocolError(f"anp: invalid origin proof from {doc['id']!r} ({exc})") from exc
    if fresh is None:
        return
    if stamp.created is None or not stamp.nonce:
        raise ProtocolError(f"anp: origin proof from {doc['id']!r} names no created time or nonce")
    if why := fresh.refusal(doc["id"], stamp.nonce.encode(), float(stamp.created)):
        raise ProtocolError(f"anp: {why}")


class AnpAdapter(ProtocolAdapter):
    name = "anp"

    def __init__(self, node_id: str, key: Ed25519PrivateKey, public_keys: dict[str, Ed25519PublicKey]):
        if NETWORK_SRC not in public_keys:
            raise SigningKeyError(f"anp: no public key for the relay {NETWORK_SRC!r}")
        self.node_id, self._key = node_id, key
        docs = {node: did_document(node, k) for node, k in public_keys.items()}
        self._did = {node: doc["id"] for node, doc in docs.items()}
        self._known = {doc["id"]: (node, doc) for node, doc in docs.items()}
        if node_id not in self._did:
            raise SigningKeyError(f"anp: node {node_id!r} is not in public.json")

    @classmethod
    def from_dir(cls, node_id: str, keys_dir: Path) -> AnpAdapter:
        return cls(node_id, *load_keys("anp", node_id, keys_dir))

    def _target(self, sender: str) -> dict[str, str]:
        if sender == NETWORK_SRC:
            return {"kind": "group", "did": MESH_DID}
        return {"kind": "agent", "did": self._did[NETWORK_SRC]}

    def encode(self, packet: dict[str, Any]) -> bytes:
        frame = direct_send(packet, self._key, self._did[self.node_id], self._target(self.node_id))
        return json.dumps(frame, separators=(",", ":"), ensure_ascii=False).encode()

    def decode(self, blob: bytes) -> dict[str, Any]:
        frame = _members(loads_object(blob, "anp"), {"jsonrpc", "id", "method", "params"}, "request")
        if frame["jsonrpc"] != "2.0" or frame["method"] != METHOD or not isinstance(frame["id"], str):
            raise ProtocolError(f"anp: not a JSON-RPC 2.0 {METHOD} request with a string id")
        meta, proof, body = read_params(frame["params"])
        sender_did = meta["sender_did"]
        node, document = self._known.get(sender_did, (None, None))
        if node is None or document is None:
            raise ProtocolError(f"anp: unknown sender DID {str(sender_did)[:120]!r}")
        if meta["target"] != self._target(node):
            raise ProtocolError(f"anp: frame from {node!r} names the wrong target {meta['target']!r}")
        verify_origin(proof, meta, body, document, self.fresh)
        packet = body["payload"]
        if not isinstance(packet, dict):
            raise ProtocolError("anp: body.payload must be an object (the packet)")
        if packet.get("src") != node or body["conversation_id"] != str(packet.get("run_id", "")):
            raise ProtocolError(
                f"anp: packet src/run {packet.get('src')!r} does not match its signer {node!r}"
            )
        return packet

    def header_size(self, packet: dict[str, Any]) -> int:
        # Everything but the packet object itself: JSON-RPC, meta with both DIDs, the origin
        # proof (digest, signature input with the key id, signature) and the body's run id.
        return len(self.encode(packet)) - len(canonical_json(packet))

    def header_bytes(self, blob: bytes, packet: Envelope) -> int:
        # The packet rides as a JSON object, byte for byte as long as its canonical form.
        return len(blob) - len(canonical_json(packet.to_dict()))
