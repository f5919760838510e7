"""``anp`` on its own wire: ANP ``direct.send`` over HTTP, authenticated with DID-WBA by the
``anp`` SDK (1.0.7), each DID document resolved over HTTP(S) from whoever owns it.

Identities are the relay-mode adapter's (``envelope.py``): e1 did:wba DIDs whose last segment
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
  HTTPS only (see mesh/localtls.py); its JSON-RPC endpoint calls ``direct.send``, which checks the
  origin proof against that document, hands the packet to the agent and answers
  ``{"payloads": [packet, ...]}`` with every frame the agent emitted. No streaming: the SDK's
  JSON-RPC answers once.

Refusals, each in the SDK's own words: a DID that is not the relay's -> 403 ``forbidden_did``
(before anything is fetched); an unresolvable DID, a bad signature or digest, an expired or
replayed nonce -> 401 with the SDK's ``WWW-Authenticate: DIDWba`` challenge; a body that is not
JSON -> 400 JSON-RPC -32700; not an object -> 400 -32600; another method -> -32601; bad params,
a bad origin proof, a packet the agent refuses -> -32602.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
from starlette.types import ASGIApp

from ....settings import Settings
from ..native import AgentEndpoint, Binding, NativeClient, Peer
from . import didhost
from .client import AnpClient
from .did import MOUNT
from .server import AgentServer


class AnpBinding(Binding):
    name = "anp"
    inner = "json"
    streams = False  # FastANP's JSON-RPC endpoint answers once, with every frame
    mount = MOUNT

    def app(self, agent: AgentEndpoint, keys_dir: Path) -> ASGIApp:
        return AgentServer(agent, keys_dir).asgi()

    def client(self, peer: Peer, http: httpx.AsyncClient, stream: bool = False) -> NativeClient:
        return AnpClient(peer, http)

    @asynccontextmanager
    async def hosted(self, settings: Settings) -> AsyncIterator[Path]:
        """The relay's DID host (``didhost.py``), shared by the process's runs on the same keys:
        the agents resolve the relay's DID there; the relay's clients read its keys and its
        published document from the host's folder."""
        host = await didhost.acquire(Path(settings.keys_dir), settings.anp_did_hostname)
        try:
            yield host.dir
        finally:
            await didhost.release(host)


def binding(protocol: str) -> Binding:
    return AnpBinding()
