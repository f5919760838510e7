"""``anp``'s agent side: the SDK's FastANP server with the ``direct.send`` method, its agent
description and its DID document (the wire: ``binding.py``)."""

# No ``from __future__ import annotations`` here: FastANP reads the annotations of the
# ``direct.send`` function at run time to find its Request parameter.

import json
import re
from pathlib import Path
from typing import Any

from anp.authentication import (
    DidWbaVerifierConfig,
    build_anp_message_service,
    extract_auth_header_parts,
    extract_signature_metadata,
    resolve_did_wba_document,
)
from anp.fastanp import FastANP
from anp.fastanp.ad_generator import ADGenerator
from cryptography.hazmat.primitives import serialization
from fastapi import Request, Response
from fastapi.responses import JSONResponse
from starlette.applications import Starlette
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ....errors import FrameError
from ...frames import NETWORK_SRC
from ...freshness import Freshness
from ..base import ProtocolError, canonical_json
from ..native import AgentEndpoint
from ..signed import SigningKeyError, load_keys
from .did import MOUNT, RPC, did_of, did_path, signed_document
from .envelope import METHOD, read_params, verify_origin

_HOST = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?$")


class InvalidParams(TypeError):
    """What ``direct.send`` refuses. FastANP turns a method's TypeError into JSON-RPC -32602
    "Invalid params" (with the message as ``data``) and has no other way for a method to answer
    with an error: anything else becomes -32603 with HTTP 500."""


def _forbidden(host: str, description: str) -> JSONResponse:
    # The SDK verifier's challenge, with the error its authenticator will not retry, and the
    # body its authentication refusals have ({"detail": ...}, as its 401s on the same paths):
    # the SDK's ANPClient.fetch_url hands it to its user as the answer's text.
    challenge = f'DIDWba realm="{host}", error="forbidden_did", error_description="{description}"'
    body = {"detail": f"forbidden_did: {description}"}
    return JSONResponse(body, status_code=403, headers={"WWW-Authenticate": challenge})


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

    async def _only_the_relay(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Before FastANP's app and the SDK's verifier in it, which would fetch any DID's document
        # from any host; the agent description stays public, as FastANP leaves it, whoever signs
        # for it. A plain ASGI layer: as a BaseHTTPMiddleware it cost a task and a stream a
        # request (~0.15 ms of CPU, bench-wire's anp at one peer 1.5x its floor).
        if scope["type"] == "http" and not scope["path"].endswith("/ad.json"):
            did = _claimed_did({k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]})
            if did is not None and (not did.startswith("did:wba:") or did.split(":")[-3:] != self.relay_path):
                relay = ":".join(self.relay_path)
                refusal = _forbidden(
                    Request(scope).url.hostname or "",
                    f"this agent answers only the relay of the runs it was started for (its DID ends in "
                    f":{relay}); {did[:120]} is another DID",
                )
                await refusal(scope, receive, send)
                return
        await self.anp.app(scope, receive, send)

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
        return Starlette(
            routes=[
                Route("/agents/{node}/{leaf}/did.json", self.document, methods=["GET"]),
                Mount("", app=self._only_the_relay),
            ]
        )
