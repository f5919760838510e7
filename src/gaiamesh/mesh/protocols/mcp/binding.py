"""``mcp`` on its own wire: each agent is an MCP server made with the official ``mcp`` SDK
(``MCPServer``) exposing its one tool over streamable HTTP; the relay is an MCP client (the SDK's
``Client`` over its streamable HTTP client).

What crosses the wire: what the SDK's own ``Client(url)`` sends (its ``mode="auto"``), the
2026-07-28 revision, where every request is self-contained (no session, no standing stream):

- ``connect()``: ``server/discover`` (a POST: the versions and capabilities of the server), then
  ``tools/list`` (a POST), whose one tool is the one the relay calls (its input schema and
  ``_meta`` carry the JSON schemas of the packets it takes and emits). A server of 2025 answers
  the discover with an error, and the SDK falls back to the 2025-11-25 session: ``initialize``,
  the ``notifications/initialized`` notice (202), the standing ``GET`` it opens for
  server-initiated messages, then ``tools/list`` (``McpBinding.handshake = "legacy"`` always
  does that).
- ``send(blob)``: one ``tools/call`` POST naming that tool with ``arguments = {"packet": <the
  packet as a JSON object>}``; its answer (a JSON body, or an SSE stream once the server sends
  an event before the result) is the call's result, whose ``content`` holds one ``TextContent``
  per frame (the frame's canonical JSON as text), in order.
  Text content is what an MCP host reads and hands a model; ``structuredContent`` is one JSON
  value checked against a declared output schema, with the same JSON repeated as text for older
  clients, so it would carry every frame twice.
- with ``stream``: the call carries a progress token, and the server sends each frame the moment
  the agent emits it as a ``notifications/progress`` event (``progress`` = its number from 1,
  ``message`` = the frame) on the call's SSE stream, before the result. MCP has no partial
  results, so the result still carries every frame: the client yields frames as progress arrives
  and checks the result against them (any the progress did not bring are yielded from it).
  Progress, not log notifications: the SDK hands each progress event to the callback of the
  call whose token it carries, while its logging callback cannot tell which call a log line
  belongs to (and logging is deprecated in the 2026-07-28 revision).

The server runs in the SDK's default modes: it answers both revisions at the one endpoint; a
2026-07-28 call is answered with a JSON body, or with SSE once the tool sends progress (the SSE
response is the only one that carries a call's progress before its result); a 2025 session is
stateful with SSE responses. Their cost, measured (python-sdk issue #3281, open): the SDK's
client closes each SSE response as soon as the result event is read, before the end of the
body, so its connection could not go back to the pool and every such POST opened a new TCP
connection; the transport under it (``client._Body``) reads the rest of a POST's answer first,
and the calls reuse their connection. A 2025 session also holds a second connection for its
standing GET, which the relay never uses (no server-initiated messages), and a 2026 client
sends nothing the session's way: one connection per agent, as the SDK's own client keeps
(``gaiamesh bench-wire``, docs/results/2026-12-05-wire-floor.md, "mcp's session").

Where the SDK falls short, and what this binding does instead (``server.py``, ``client.py``):

- The SDK's client takes only an ``httpx2.AsyncClient`` (mcp 2 moved from httpx to httpx2): the
  relay's ``httpx.AsyncClient`` rides under it as an ``httpx2`` transport (``client.ThroughHttpx``),
  so its pool, limits and timeouts are the ones used.
- The agent's native server runs no ASGI lifespan, which is where the SDK starts its session
  manager: ``server.SelfStartingApp`` starts it on the first request.
- (A 2025 session only.) On HTTP 404 for a session the server no longer knows (the agent restarted, or the session
  idled out after 30 minutes), the spec says the client MUST start a new session; the SDK's
  client turns the 404 into a JSON-RPC error (the server's "Session not found", or its own
  "Session terminated") and stays on the dead session (python-sdk issue #3556, open). The
  transport above sees the 404; the client then opens a new session and resends the frame once
  (a 404 means no handler saw it), as the Rust and TypeScript SDKs do. Nothing else is retried:
  a frame the SDK gives up on (connection refused or reset, a timeout, an error) is lost.

The endpoint is the mount, ``/mcp``, with or without the slash (``server.at_the_mount``: the
SDK's route is its app's ``/``, and Starlette would answer ``/mcp`` with a 307 to ``/mcp/``,
a second request for every call).

A Host check comes with the SDK's app (DNS-rebinding protection): on an agent listening on
loopback, a request must name in its Host loopback (127.0.0.1, localhost, [::1]) or one of the
deployment's names for the agent (its host name, its configured ``AGENT_HOST``, the hosts of
``AGENTS``), any port; any other Host gets the SDK's 421 (``server.transport_security``). An
agent listening on a network address (a container's 0.0.0.0) has no check, as the SDK leaves
it: its callers name it by their network's names, which it cannot list. MCP's documents (the
discover or initialize result, the tool list) carry no URL of the server, so nothing is derived from the
request's Host.
"""

from __future__ import annotations

from pathlib import Path

import httpx
from starlette.types import ASGIApp

from ..native import AgentEndpoint, Binding, NativeClient, Peer
from .client import Handshake, McpClient
from .server import SelfStartingApp, server_for, transport_security


class McpBinding(Binding):
    name = "mcp"
    inner = "json"
    mount = "/mcp"
    streams = True
    # How the client starts (client.Handshake): as the SDK's own Client(url) does, server/discover
    # first (revision 2026-07-28, no session), the initialize handshake only for a server of 2025.
    handshake: Handshake = "auto"

    def app(self, agent: AgentEndpoint, keys_dir: Path) -> ASGIApp:
        server = server_for(agent)
        # The app's own path is "/": the agent's server hands it requests below the mount.
        # The SDK guards against DNS rebinding when it listens on loopback: the Host must name
        # loopback or one of the agent's names. An agent in a container listens on its network,
        # where its callers name it by its service's name, so it is told the address it really
        # listens on. The names are the agent's (agents/native.py), none for an endpoint without.
        host = getattr(agent, "listens_on", "127.0.0.1")
        security = transport_security(host, tuple(getattr(agent, "host_names", ())))
        app = server.streamable_http_app(streamable_http_path="/", host=host, transport_security=security)
        return SelfStartingApp(server, app)

    def client(self, peer: Peer, http: httpx.AsyncClient, stream: bool = False) -> NativeClient:
        return McpClient(peer, http, stream, self.handshake)


def binding(protocol: str) -> Binding:
    return McpBinding()

