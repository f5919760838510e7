"""``anp``'s relay side: ``direct.send`` posted with the SDK's DID-WBA authenticator, after the
agent's DID document is resolved from the agent (the wire: ``binding.py``)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import httpx
from anp.authentication import DIDWbaAuthHeader
from anp.authentication.did_wba import validate_did_document_binding

from ...frames import NETWORK_SRC
from ..base import ProtocolError, canonical_json, loads_object
from ..native import NativeClient, Peer, Undelivered
from ..signed import SigningKeyError, load_keys
from .did import RPC, did_of, did_path, relay_document_path
from .envelope import direct_send


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
