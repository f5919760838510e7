"""``anp`` on its own wire: ANP ``direct.send`` over HTTP, authenticated with DID-WBA by the
``anp`` SDK (1.0.7), each DID document resolved over HTTP(S) from whoever owns it.

Identities are the relay-mode adapter's (protocols/anp.py): e1 did:wba DIDs whose last segment
is the fingerprint of the node's Ed25519 key from ``KEYS_DIR``. Here a DID names where its
document really is, as did:wba means it to: ``did:wba:<host>:anp:agents:<node>:e1_<fp>`` is
served at ``<host>/anp/agents/<node>/e1_<fp>/did.json`` (signed with its key, the SDK's e1
proof), by the agent for its own DID, and by the relay's DID host for the relay's.

The wire, for one frame the relay sends to an agent:

- ``connect()``: GET the agent's DID document at its did:wba path under ``peer.base_url``; the
  SDK checks its e1 binding, and its key must be the agent's in ``public.json``.
- ``send()``: POST ``<base_url>/rpc`` with the JSON-RPC ``direct.send`` request the relay mode
  builds (the packet in ``body.payload``, the relay's RFC 9421 origin proof), and DID-WBA
  authentication made by the SDK's ``DIDWbaAuthHeader``: HTTP Message Signatures on the first
  request (the SDK's default scheme; its older ``Authorization: DIDWba`` header is one argument
  away and the agent accepts both), then the Bearer token the agent returned.
- The agent is the SDK's FastANP server: its middleware checks the request with the SDK's
  ``DidWbaVerifier``, which fetches the relay's DID document from the host the DID names, over
  HTTPS only (see localtls.py); its JSON-RPC endpoint calls ``direct.send``, which checks the
  origin proof against that document, hands the packet to the agent and answers
  ``{"payloads": [packet, ...]}`` with every frame the agent emitted. No streaming: the SDK's
  JSON-RPC answers once.

Refusals, each in the SDK's own words: a DID that is not the relay's -> 403 ``forbidden_did``
(before anything is fetched); an unresolvable DID, a bad signature or digest, an expired or
replayed nonce -> 401 with the SDK's ``WWW-Authenticate: DIDWba`` challenge; a body that is not
JSON -> 400 JSON-RPC -32700; not an object -> 400 -32600; another method -> -32601; bad params,
a bad origin proof, a packet the agent refuses -> -32602.
"""

# No ``from __future__ import annotations`` here: FastANP reads the annotations of the
# ``direct.send`` function at run time to find its Request parameter.

import ipaddress
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
from anp.authentication import (
    DIDWbaAuthHeader,
    DidWbaVerifierConfig,
    build_anp_message_service,
    extract_auth_header_parts,
    extract_signature_metadata,
    resolve_did_wba_document,
)
from anp.authentication.did_wba import (
    _build_ed25519_binding_entry,
    compute_multikey_fingerprint,
    validate_did_document_binding,
)
from anp.fastanp import FastANP
from anp.fastanp.ad_generator import ADGenerator
from anp.proof import CRYPTOSUITE_EDDSA_JCS_2022, PROOF_TYPE_DATA_INTEGRITY, generate_w3c_proof
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from starlette.applications import Starlette
from starlette.routing import Mount, Route
from starlette.types import ASGIApp

from ...errors import FrameError
from ..frames import NETWORK_SRC
from ..freshness import Freshness
from ..protocols.anp import METHOD, direct_send, read_params, verify_origin
from ..protocols.base import ProtocolError, canonical_json, loads_object
from ..protocols.signed import SigningKeyError, load_keys
from .base import AgentEndpoint, Binding, NativeClient, Peer, Undelivered

MOUNT = "/anp"
RPC = "/rpc"
CONTEXTS = [
    "https://www.w3.org/ns/did/v1",
    "https://w3id.org/security/data-integrity/v2",
    "https://w3id.org/security/multikey/v1",
]  # the SDK's e1 contexts
_HOST = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?$")


# --- identities ---------------------------------------------------------------------------------
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


# --- the agent's server ----------------------------------------------------------------------
class InvalidParams(TypeError):
    """What ``direct.send`` refuses. FastANP turns a method's TypeError into JSON-RPC -32602
    "Invalid params" (with the message as ``data``) and has no other way for a method to answer
    with an error: anything else becomes -32603 with HTTP 500."""


def _forbidden(host: str, description: str) -> JSONResponse:
    # The SDK verifier's challenge, with the error its authenticator will not retry.
    challenge = f'DIDWba realm="{host}", error="forbidden_did", error_description="{description}"'
    return JSONResponse({"detail": description}, status_code=403, headers={"WWW-Authenticate": challenge})


def _claimed_did(headers: dict[str, str]) -> str | None:
    """The DID a request signs as (HTTP Message Signatures' keyid, or the legacy header's)."""
    try:
        if "signature-input" in headers:
            keyid = extract_signature_metadata(headers)["params"].get("keyid")
            return keyid.split("#", 1)[0] if isinstance(keyid, str) else None
        if headers.get("authorization", "").startswith("DIDWba"):
            return extract_auth_header_parts(headers["authorization"])[0]
    except ValueError:
        pass  # malformed: the SDK's verifier refuses it in its own words
    return None


class AgentServer:
    """One agent's ANP server: FastANP's app with the ``direct.send`` method, its agent
    description and its DID document."""

    def __init__(self, agent: AgentEndpoint, keys_dir: Path):
        self.agent = agent
        self.key, public = load_keys("anp", agent.node_id, keys_dir)
        if NETWORK_SRC not in public:
            raise SigningKeyError(f"anp: no public key for the relay {NETWORK_SRC!r}")
        self.relay_path = did_path(NETWORK_SRC, public[NETWORK_SRC])
        self.own_path = did_path(agent.node_id, self.key.public_key())
        self.resolved: dict[str, dict[str, Any]] = {}  # the relay's document, for origin proofs
        # The nonces of the relay's requests this agent took (ANP-02: a receiver refuses a replay).
        self.fresh = Freshness(agent.replay_window_s) if agent.replay_window_s > 0 else None
        self.documents: dict[tuple[str, str], dict[str, Any]] = {}  # ours, by (host, mount)
        self.anp = FastANP(
            name=agent.tool,
            description=agent.description,
            did=self.did("localhost", MOUNT),
            agent_domain="localhost",
            jsonrpc_server_path=RPC,
            auth_config=self._auth_config(),
        )
        self.direct_send = self.anp.interface("/info/direct.send.json", description=self._describe())(
            self._method()
        )
        self.anp.app.middleware("http")(self._only_the_relay)  # added last: runs before the SDK's
        self.anp.app.add_api_route("/ad.json", self.description, methods=["GET"])

    def _auth_config(self) -> DidWbaVerifierConfig:
        # The verifier's Bearer tokens, signed with the agent's own key (EdDSA): they outlive a
        # restart of the agent, as its identity does.
        private = self.key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode()
        public = (
            self.key.public_key()
            .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
            .decode()
        )
        return DidWbaVerifierConfig(jwt_private_key=private, jwt_public_key=public, jwt_algorithm="EdDSA")

    def _describe(self) -> str:
        return f"ANP direct.send to the {self.agent.tool} agent: {self.agent.description}"

    def did(self, host: str, mount: str) -> str:
        return did_of(host, mount, self.agent.node_id, self.key.public_key())

    def origin(self, request: Request) -> tuple[str, str]:
        """The host and mount the caller reached us at (so our URLs and DID are the ones it
        used: through the relay's tap, not the port we listen on)."""
        host = request.headers.get("host", "")
        if not _HOST.match(host):
            raise InvalidParams(f"anp: the request's Host {host[:80]!r} is not a host name")
        return host, request.scope.get("root_path", "")

    async def _only_the_relay(self, request: Request, call_next: Any) -> Response:
        # Before the SDK's verifier, which would fetch any DID's document from any host; the
        # agent description stays public, as FastANP leaves it, whoever signs for it.
        public = request.url.path.endswith("/ad.json")
        did = None if public else _claimed_did({k.lower(): v for k, v in request.headers.items()})
        if did is not None and (not did.startswith("did:wba:") or did.split(":")[-3:] != self.relay_path):
            return _forbidden(request.url.hostname or "", f"DID {did[:120]} is not the relay's")
        response: Response = await call_next(request)
        return response

    async def relay_document(self, did: str) -> dict[str, Any]:
        """The relay's DID document, resolved over HTTPS by the SDK once per process: the SDK's
        verifier resolves it too but keeps nothing; an e1 DID names its key, so its document
        cannot change keys behind the cache."""
        if did not in self.resolved:
            doc = await resolve_did_wba_document(did)
            if not doc:
                raise InvalidParams(f"anp: cannot resolve {did[:120]} for its origin proof")
            self.resolved[did] = doc
        return self.resolved[did]

    def _method(self) -> Any:
        async def direct_send(
            meta: dict[str, Any], auth: dict[str, Any], body: dict[str, Any], request: Request
        ) -> dict[str, Any]:
            return {"payloads": await self.handle({"meta": meta, "auth": auth, "body": body}, request)}

        direct_send.__name__ = direct_send.__qualname__ = METHOD  # FastANP's method name is the function's
        return direct_send

    async def handle(self, params: dict[str, Any], request: Request) -> list[dict[str, Any]]:
        host, mount = self.origin(request)
        try:
            meta, proof, body = read_params(params)
            signer = getattr(request.state, "did", None)
            if meta["sender_did"] != signer:
                raise ProtocolError(f"anp: sender_did is not the DID that signed the request ({signer})")
            if meta["target"] != {"kind": "agent", "did": self.did(host, mount)}:
                raise ProtocolError(f"anp: the frame names another target {str(meta['target'])[:160]}")
            verify_origin(proof, meta, body, await self.relay_document(meta["sender_did"]), self.fresh)
            packet = body["payload"]
            if not isinstance(packet, dict) or body["conversation_id"] != str(packet.get("run_id", "")):
                raise ProtocolError("anp: body.payload must be the packet, of the run in conversation_id")
            return [json.loads(frame) async for frame in self.agent.answer(canonical_json(packet), "json")]
        except FrameError as exc:  # ProtocolError is one
            raise InvalidParams(str(exc)) from exc

    async def description(self, request: Request) -> JSONResponse:
        """ANP's agent description (FastANP's header and OpenRPC interface), at the URLs the
        caller used, with the packet types the agent consumes."""
        try:
            host, mount = self.origin(request)
        except InvalidParams as exc:
            return JSONResponse({"detail": str(exc)}, status_code=400)
        base = f"{request.url.scheme}://{host}{mount}"
        ad = ADGenerator(
            self.agent.tool, self.agent.description, self.did(host, mount), base
        ).generate_common_header(ad_url=f"{base}/ad.json")
        ad["interfaces"] = [
            self.anp.interface_manager.create_interface_proxy(self.direct_send, base, RPC).content
        ]
        ad["consumes"] = sorted(self.agent.consumes)  # an extension member: ANP has no field for it
        return JSONResponse(ad)

    async def document(self, request: Request) -> Response:
        """Our DID document, for the DID the caller's Host and our mount name."""
        if [request.path_params["node"], request.path_params["leaf"]] != self.own_path[1:]:
            return JSONResponse({"detail": "no such DID document"}, status_code=404)
        try:
            host, mount = self.origin(request)
        except InvalidParams as exc:
            return JSONResponse({"detail": str(exc)}, status_code=400)
        if (host, mount) not in self.documents:
            if len(self.documents) >= 8:  # a few origins at most (the tap's, a test's): no growth
                self.documents.clear()
            self.documents[(host, mount)] = self._document(host, mount, request.url.scheme)
        return JSONResponse(self.documents[(host, mount)])

    def _document(self, host: str, mount: str, scheme: str) -> dict[str, Any]:
        did, base = self.did(host, mount), f"{scheme}://{host}{mount}"
        services = [
            build_anp_message_service(
                did=did,
                service_endpoint=base + RPC,
                profiles=["anp.direct.base.v1"],
                security_profiles=["transport-protected"],
            ),
            {"id": f"{did}#ad", "type": "AgentDescription", "serviceEndpoint": f"{base}/ad.json"},
        ]
        return signed_document(did, self.key, services)

    def asgi(self) -> ASGIApp:
        # The DID document outside FastANP's app: its middleware would ask for authentication,
        # and a DID document is public (FastANP's exemptions are absolute paths, not under a mount).
        app: FastAPI = self.anp.app
        return Starlette(
            routes=[
                Route("/agents/{node}/{leaf}/did.json", self.document, methods=["GET"]),
                Mount("", app=app),
            ]
        )


# --- the relay's client ----------------------------------------------------------------------
class AnpClient(NativeClient):
    """The relay's ANP client of one agent: the SDK's authenticator (one per agent: it keys its
    Bearer tokens by host name alone, and every agent here is 127.0.0.1) over the relay's httpx
    client."""

    def __init__(self, peer: Peer, http: httpx.AsyncClient):
        self.peer, self.http, self.url = peer, http, peer.base_url + RPC
        self.key, public = load_keys("anp", NETWORK_SRC, peer.keys_dir)
        if peer.node_id not in public:
            raise SigningKeyError(f"anp: node {peer.node_id!r} is not in public.json")
        document = relay_document_path(peer.keys_dir)
        if not document.exists():
            raise SigningKeyError(
                f"anp: no DID document of the relay at {document} (anp.publish_did writes it)"
            )
        self.did = json.loads(document.read_text())["id"]
        self.auth = DIDWbaAuthHeader(str(document), str(peer.keys_dir / f"{NETWORK_SRC}.pem"))
        self.agent_key = public[peer.node_id]
        self.agent_did: str | None = None

    async def connect(self) -> None:
        """Resolve the agent's DID over HTTP, from the agent, through the tap."""
        base = urlsplit(self.peer.base_url)
        did = did_of(base.netloc, base.path, self.peer.node_id, self.agent_key)
        url = self.peer.base_url + "/" + "/".join(did_path(self.peer.node_id, self.agent_key)) + "/did.json"
        try:
            response = await self.http.get(url, headers={"Accept": "application/json"})
        except httpx.HTTPError as exc:
            raise Undelivered(
                f"anp: DID document of {self.peer.node_id!r}: {type(exc).__name__}: {exc}"
            ) from exc
        if response.status_code != 200:
            raise Undelivered(
                f"anp: DID document of {self.peer.node_id!r}: HTTP {response.status_code} {response.text[:200]}"
            )
        try:
            doc = loads_object(response.content, "anp DID document")
        except ProtocolError as exc:
            raise Undelivered(str(exc)) from exc
        if doc.get("id") != did or not validate_did_document_binding(doc):
            raise Undelivered(
                f"anp: {url} is not a document of {did} bound to its key (id {str(doc.get('id'))[:120]})"
            )
        self.agent_did = did

    async def send(self, blob: bytes) -> AsyncIterator[bytes]:
        if self.agent_did is None:
            await self.connect()
        assert self.agent_did is not None
        try:
            packet = loads_object(blob, "anp")
        except ProtocolError as exc:
            raise Undelivered(f"anp: not a packet to send ({exc})") from exc
        frame = direct_send(packet, self.key, self.did, {"kind": "agent", "did": self.agent_did})
        body = json.dumps(frame, separators=(",", ":"), ensure_ascii=False).encode()
        for payload in _payloads(await self._post(body), self.url):
            yield canonical_json(payload)

    async def _post(self, body: bytes) -> httpx.Response:
        """POST with the SDK's authentication, and its one retry after a 401 (a Bearer token the
        agent no longer takes, or a challenge), as the SDK's own ANPClient does it."""
        headers = {"Content-Type": "application/json"}
        sent = {**headers, **self.auth.get_auth_header(self.url, method="POST", headers=headers, body=body)}
        try:
            response = await self.http.post(self.url, content=body, headers=sent)
            if response.status_code == 401 and self._retry(sent, response):
                challenge = self.auth.get_challenge_auth_header(
                    self.url, dict(response.headers), "POST", headers, body
                )
                response = await self.http.post(self.url, content=body, headers={**headers, **challenge})
        except httpx.HTTPError as exc:
            raise Undelivered(f"anp: POST {self.url}: {type(exc).__name__}: {exc}") from exc
        if response.status_code == 200:
            self.auth.update_token(self.url, dict(response.headers))
        return response

    def _retry(self, sent: dict[str, str], response: httpx.Response) -> bool:
        if sent.get("Authorization", "").startswith("Bearer "):
            self.auth.clear_token(self.url)
            return True
        return self.auth.should_retry_after_401(dict(response.headers))


def _payloads(response: httpx.Response, url: str) -> list[dict[str, Any]]:
    """The frames of a ``direct.send`` answer, or :class:`Undelivered` with what came back."""
    try:
        answer = loads_object(response.content, "anp answer")
    except ProtocolError:
        raise Undelivered(f"anp: POST {url}: HTTP {response.status_code} {response.text[:300]}") from None
    error = answer.get("error")
    if isinstance(error, dict):
        raise Undelivered(
            f"anp: JSON-RPC error {error.get('code')} {error.get('message')}: {str(error.get('data'))[:300]}"
        )
    if response.status_code != 200:
        raise Undelivered(
            f"anp: POST {url}: HTTP {response.status_code} {str(answer.get('detail', answer))[:300]}"
        )
    result = answer.get("result")
    payloads = result.get("payloads") if isinstance(result, dict) else None
    if not isinstance(payloads, list) or not all(isinstance(p, dict) for p in payloads):
        raise Undelivered(f"anp: the answer's result has no list of packets: {response.text[:300]}")
    return payloads


class AnpBinding(Binding):
    name = "anp"
    inner = "json"
    streams = False  # FastANP's JSON-RPC endpoint answers once, with every frame
    mount = MOUNT

    def app(self, agent: AgentEndpoint, keys_dir: Path) -> ASGIApp:
        return AgentServer(agent, keys_dir).asgi()

    def client(self, peer: Peer, http: httpx.AsyncClient, stream: bool = False) -> NativeClient:
        return AnpClient(peer, http)


def binding(protocol: str) -> Binding:
    return AnpBinding()
