"""``agora`` on its own wire: the ``agora-protocol`` SDK's receiver (the agent) and sender (the
relay) over HTTP, with our fixed protocol document published at a URL of the agent.

One frame is one Agora message: the sender POSTs ``{protocolHash, protocolSources, body}`` to the
receiver's ``/`` (``body``: the packet's canonical JSON as text), and the receiver replies
``{"status": "success", "body": ...}`` where ``body`` is a JSON array (as text) of the packets
the agent emitted while handling it, or ``{"status": "error", "message": ...}``, the SDK's own
error reply (a wrong hash, an unknown protocol, a malformed message, a body that is not a packet,
natural language to an agent with no model), with the reason as ``body`` too, which the SDK's
sender reads from every reply (``server.readable_errors``).

``protocolSources`` carries the URL of the document, ``<mount>/protocols/<name>``, not the
document inline (the relay mode's ``data:`` source, ~1.3 kB a frame). The agent serves it; its
receiver starts knowing no protocol, so the first message makes it download the document from
that URL and check its hash with the SDK's own ``download_and_verify_protocol`` (as
``Receiver.create_conversation`` does for any unknown hash); the relay's :meth:`connect` does the
same once before its first frame. No model anywhere (``toolformer=None``): the receiver's
components that would ask one are replaced, through ``Receiver``'s own parameters, by fixed ones
(a checker that accepts exactly our document, a "programmer" that hands back the routine below,
a responder and negotiator that refuse), and the routine runs in an SDK executor as an
LLM-written one would.

The receiver is Flask (WSGI), mounted with ``a2wsgi``; the documents are served by Starlette on
the event loop, not by Flask, so that a receiver thread downloading a document never waits for
another receiver thread (all ``RECEIVER_THREADS`` busy would deadlock). The relay posts with the
SDK's sender transport (``requests``, synchronous), in a thread of the client's own pool; it
cannot use the relay's ``httpx.AsyncClient`` (see :class:`AgoraClient`). Nothing streams: the
reply comes when the agent has finished with the frame.
"""

from __future__ import annotations

from pathlib import Path

import httpx
from starlette.types import ASGIApp

from ..native import AgentEndpoint, Binding, NativeClient, Peer
from .client import AgoraClient
from .server import AgentApp


class AgoraBinding(Binding):
    name = "agora"
    inner = "json"
    streams = False
    mount = "/agora"

    def app(self, agent: AgentEndpoint, keys_dir: Path) -> ASGIApp:
        return AgentApp(agent)

    def client(self, peer: Peer, http: httpx.AsyncClient, stream: bool = False) -> NativeClient:
        return AgoraClient(peer, http)  # stream: nothing to stream (the reply comes whole)


def binding(protocol: str) -> Binding:
    return AgoraBinding()
