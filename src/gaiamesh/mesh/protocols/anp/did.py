"""``anp``'s identities on its own wire: did:wba DIDs that name where their documents are, the
e1 documents themselves, and the relay's, published beside its key and served by its DID host
(``didhost.py``); the agent's server and the relay's client both use them (the wire: ``binding.py``)."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from anp.authentication.did_wba import _build_ed25519_binding_entry, compute_multikey_fingerprint
from anp.proof import CRYPTOSUITE_EDDSA_JCS_2022, PROOF_TYPE_DATA_INTEGRITY, generate_w3c_proof
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from fastapi import Request, Response
from fastapi.responses import JSONResponse
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.types import ASGIApp

from ...frames import NETWORK_SRC
from ..signed import SigningKeyError, load_keys

MOUNT = "/anp"
RPC = "/rpc"
CONTEXTS = [
    "https://www.w3.org/ns/did/v1",
    "https://w3id.org/security/data-integrity/v2",
    "https://w3id.org/security/multikey/v1",
]  # the SDK's e1 contexts


def did_path(node: str, key: Ed25519PublicKey) -> list[str]:
    """The last did:wba segments of ``node``'s DID (after the mount's)."""
    return ["agents", quote(node, safe=""), f"e1_{compute_multikey_fingerprint(key)}"]


def did_of(host: str, prefix: str, node: str, key: Ed25519PublicKey) -> str:
    """``did:wba:<host>:<prefix...>:agents:<node>:e1_<fp>``; the port's colon percent-encoded
    as did:wba requires (the SDK does the same in ``create_did_wba_document``)."""
    segments = [s for s in prefix.strip("/").split("/") if s] + did_path(node, key)
    return ":".join(["did:wba", quote(host, safe=""), *segments])


def document_url_path(did: str) -> str:
    """Where did:wba puts the document of ``did`` on its host (the SDK's resolver's rule)."""
    return "/" + "/".join(did.split(":")[3:]) + "/did.json"


def signed_document(did: str, key: Ed25519PrivateKey, services: list[dict[str, Any]]) -> dict[str, Any]:
    """An e1 DID document as the SDK's ``create_did_wba_document`` makes one (which only ever
    makes a new key, so it is built here around the node's key): one Multikey for
    authentication and assertion, and the SDK's eddsa-jcs-2022 proof by that key."""
    method = _build_ed25519_binding_entry(did, key.public_key())  # the SDK's e1 entry (not exported)
    doc: dict[str, Any] = {
        "@context": CONTEXTS,
        "id": did,
        "verificationMethod": [method],
        "authentication": [method["id"]],
        "assertionMethod": [method["id"]],
    }
    if services:
        doc["service"] = services
    return generate_w3c_proof(
        doc, key, method["id"], proof_type=PROOF_TYPE_DATA_INTEGRITY, cryptosuite=CRYPTOSUITE_EDDSA_JCS_2022
    )


def relay_document_path(keys_dir: Path, node: str = NETWORK_SRC) -> Path:
    return keys_dir / f"{node}.did.json"


def publish_did(keys_dir: Path, host: str, node: str = NETWORK_SRC) -> dict[str, Any]:
    """Write ``node``'s (the relay's) DID document, naming ``host`` (``name[:port]``, where the
    agents reach the relay's DID host over HTTPS), beside its key; the SDK's authenticator reads
    it from there, and :func:`did_host_app` serves it."""
    try:
        ipaddress.ip_address(urlsplit(f"//{host}").hostname or "")
    except ValueError:
        pass
    else:  # as the SDK's create_did_wba_document: a did:wba names a host
        raise SigningKeyError(f"anp: a did:wba DID names a host, not an IP address ({host!r})")
    key, _ = load_keys("anp", node, keys_dir)
    doc = signed_document(did_of(host, MOUNT, node, key.public_key()), key, [])
    relay_document_path(keys_dir, node).write_text(json.dumps(doc, indent=2))
    return doc


def did_host_app(keys_dir: Path, node: str = NETWORK_SRC) -> ASGIApp:
    """The relay's DID host: its document at the path its DID names, read from ``keys_dir`` at
    each request (a republished document is served at once). Run it over TLS, with the
    certificate of localtls.py, as the whole app of its server (the path includes ``/anp``)."""

    async def document(request: Request) -> Response:
        path = relay_document_path(keys_dir, node)
        doc = json.loads(path.read_text()) if path.exists() else None
        if doc is None or document_url_path(doc["id"]) != request.url.path:
            return JSONResponse({"detail": "no DID document here"}, status_code=404)
        return JSONResponse(doc)

    return Starlette(routes=[Route("/{path:path}/did.json", document, methods=["GET"])])
