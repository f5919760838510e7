"""An agent's native server (``TRANSPORT=native``): each protocol's own server, made by its
binding (``mesh/protocols/<protocol>/``, found through ``mesh/native/``), on ``PORT + NATIVE_PORT_OFFSET``.

The bindings are mounted at their paths (``/a2a``, ``/acp``, ``/mcp``, ``/anp``, ``/agora``,
``/http/<protocol>``). The agent's own protocol is built at start-up when it is started for
native runs, so a run's first request does not pay for loading an SDK; any other is built when
first asked for. ``GET /gaiamesh/hello`` is the relay's handshake, as on the WebSocket: the mesh
token's proofs and what the agent announces, in the same headers; it names the relay's run
(``X-Gaiamesh-Run``), whose packets then get their workspace folder at first sight, as on the
WebSocket. A packet of any other run (a call from outside the relay) leaves nothing under
``workspaces/`` unless the agent's tool works on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import AsyncIterator, Iterator
from typing import Protocol

import uvicorn
from starlette.types import ASGIApp, Receive, Scope, Send

from .. import ports
from ..errors import ConfigError, FrameError, PortTaken, Unanswerable
from ..mesh import admission
from ..mesh.frames import Announcement, Packet
from ..mesh.freshness import Freshness
from ..mesh.native import Binding, NoNativeWire, binding, built_at_start, pool
from ..mesh.protocols import ProtocolAdapter
from ..mesh.protocols.native import HELLO
from ..settings import Settings, parse_agents
from ..tools.tool import Tool
from .runstate import RelayRuns

log = logging.getLogger("gaiamesh.agents.native")


class QueueOutbox:
    """A native answer: the frames a handled packet emits, in a queue its response reads."""

    def __init__(self, adapter: ProtocolAdapter, from_relay: bool) -> None:
        self.adapter = adapter
        self.from_relay = from_relay
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.open = True

    async def send(self, blob: bytes) -> bool:
        if self.open:
            self.queue.put_nowait(blob)
        return self.open


class ServedAgent(Protocol):
    """What the native server needs of an agent (``agents/agent.py``'s ``MeshAgent``), named here
    so that this module does not import the agent that starts it."""

    node_id: str
    tool: Tool
    announcement: Announcement
    settings: Settings
    handshakes: Freshness | None
    relay_runs: RelayRuns

    def adapter_for(self, protocol: str) -> ProtocolAdapter | None: ...
    def decode_or_log(self, adapter: ProtocolAdapter, blob: bytes) -> Packet: ...
    def held_document(self) -> str | None: ...
    async def handle(self, packet: Packet, out: QueueOutbox) -> None: ...


class Endpoint:
    """What a binding's server knows of the agent (``mesh.native.AgentEndpoint``)."""

    def __init__(self, agent: ServedAgent) -> None:
        self.agent = agent
        self.node_id = agent.node_id
        self.tool = agent.tool.name
        self.description = agent.tool.description or f"the {agent.tool.name} tool"
        self.consumes = agent.announcement.consumes
        self.reads = agent.announcement.reads
        self.emits = frozenset(t.value for t in agent.tool.emitted)
        self.answers_text = agent.tool.text is not None
        self.listens_on = agent.settings.agent_host  # loopback, or a container's network (0.0.0.0)
        self.host_names = host_names(agent.settings)
        self.replay_window_s = agent.settings.replay_window_s
        self.acp_store = agent.settings.acp_store

    async def answer(self, blob: bytes, inner: str) -> AsyncIterator[bytes]:
        adapter = self.agent.adapter_for(inner)
        if adapter is None:
            raise FrameError(f"agent {self.node_id} cannot speak {inner!r}")
        packet = self.agent.decode_or_log(adapter, blob)  # raises FrameError, logged
        out = QueueOutbox(adapter, from_relay=packet.run_id in self.agent.relay_runs)
        handling = asyncio.create_task(self.agent.handle(packet, out), name=f"native-{packet.type.value}")
        handling.add_done_callback(lambda _: out.queue.put_nowait(None))
        try:
            while (frame := await out.queue.get()) is not None:
                yield frame
            await handling  # its error, if any, is the request's
        finally:
            out.open = False
            if not handling.done():  # the caller went away: the work it asked for stops
                handling.cancel()

    async def answer_text(self, query: str, document: str | None) -> list[str]:
        # Outside any run: nothing is kept, logged or written under workspaces/.
        tool_text = self.agent.tool.text
        if tool_text is None:
            raise Unanswerable(f"the {self.tool} tool takes packets, not text")
        if not query.strip():
            raise Unanswerable("an empty query: send what to look for as the last text")
        if document is None and (document := self.agent.held_document()) is None:
            raise Unanswerable(
                f"no document: send it as text before the query (agent {self.node_id} holds no run's document)"
            )
        if not document.strip():
            raise Unanswerable("an empty document: send its text before the query")
        return await asyncio.to_thread(tool_text, query, document)  # BM25 over a long document


class NativeApp:
    """The ASGI app: the hello, then each binding at its mount, built on first use."""

    def __init__(self, agent: ServedAgent) -> None:
        self.agent = agent
        self.endpoint = Endpoint(agent)
        self.apps: dict[str, ASGIApp] = {}  # mount -> the binding's app
        self.limit = 4 * agent.settings.max_frame_bytes

    def build(self, protocol: str) -> Binding:
        made = binding(protocol)
        if made.mount not in self.apps:
            self.apps[made.mount] = made.app(self.endpoint, self.agent.settings.keys_dir)
        return made

    def _mounted(self, path: str) -> tuple[str, ASGIApp] | None:
        for mount, app in self.apps.items():
            if path == mount or path.startswith(mount + "/"):
                return mount, app
        protocol = _protocol_of(path)
        if protocol is None:
            return None
        try:
            made = self.build(protocol)
        except NoNativeWire:
            return None
        return made.mount, self.apps[made.mount]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # lifespan: the bindings' apps are built when asked for
        path: str = scope["path"]
        if path == HELLO:
            await self._hello(scope, send)
            return
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.limit:
            await _plain(send, 413, f"a body over {self.limit} bytes (MAX_FRAME_BYTES x 4)\n")
            return
        found = self._mounted(path)
        if found is None:
            await _plain(send, 404, f"no native protocol at {path}\n")
            return
        mount, app = found
        # As Starlette's Mount does: the path stays whole (URLs the app builds or checks, such as
        # a signature's target, are the caller's), root_path says what the app sits under.
        await app({**scope, "root_path": scope.get("root_path", "") + mount}, receive, send)

    async def _hello(self, scope: Scope, send: Send) -> None:
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        token = self.agent.settings.mesh_token
        if why := admission.relay_refusal(token, _ci(headers), self.agent.handshakes):
            await _plain(send, 403, f"{why}\n")
            return
        if run_id := _ci(headers).get(admission.HEADER_RUN):
            self.agent.relay_runs.admit(run_id[:128])
        out = dict(self.agent.announcement.headers())
        challenge = _ci(headers).get(admission.HEADER_CHALLENGE)
        if token and challenge:
            out[admission.HEADER_AGENT_PROOF] = admission.agent_proof(
                token, challenge, self.agent.node_id, self.agent.tool.name, HELLO
            )
        await _plain(send, 200, "ok\n", out)


WILDCARDS = ("", "0.0.0.0", "::")  # addresses to listen on, not names to be called by


def host_names(settings: Settings) -> tuple[str, ...]:
    """What the deployment calls this agent: its machine's (or container's) host name, the host
    it is configured to listen on unless a wildcard, and the hosts AGENTS names for its node."""
    names = [socket.gethostname(), settings.agent_host]
    with contextlib.suppress(ConfigError):
        names += [
            s.dns_name or s.host
            for s in parse_agents(settings.agents)
            if settings.node_id in (s.node_id, s.entry)
        ]
    return tuple(n for n in dict.fromkeys(names) if n not in WILDCARDS)


class _Caseless(dict[str, str]):
    def get(self, key: str, default: str | None = None) -> str | None:  # type: ignore[override]
        return super().get(key.lower(), default)


def _ci(headers: dict[str, str]) -> _Caseless:
    return _Caseless({k.lower(): v for k, v in headers.items()})


def _protocol_of(path: str) -> str | None:
    parts = path.strip("/").split("/")
    if parts[0] == "http" and len(parts) > 1:
        return parts[1]
    return parts[0] or None


async def _plain(send: Send, status: int, text: str, headers: dict[str, str] | None = None) -> None:
    body = text.encode()
    raw = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield  # the agent's own handlers stop it (cli/runs.py): uvicorn must not take them


async def serve_native(agent: ServedAgent, stop: asyncio.Event) -> None:
    """Serve the agent's native protocols until ``stop`` is set."""
    settings = agent.settings
    app = NativeApp(agent)
    for protocol in built_at_start(settings.native_preload, settings.protocol, settings.transport):
        app.build(protocol)  # its SDK loads now, not in a run's first request
    host, port = settings.agent_host, settings.port + settings.native_port_offset
    config = uvicorn.Config(app, host=host, port=port, lifespan="off", log_level="warning", access_log=False,
                            http="h11", timeout_graceful_shutdown=2,  # a run outlives a lost request
                            timeout_keep_alive=pool.server_keep_alive(settings))  # fmt: skip (idle gaps: mesh/native/pool.py)
    server = _Server(config)
    try:
        sock = ports.declared_tcp(config.bind_socket())  # TCP_NODELAY on its connections
    except SystemExit as exc:  # uvicorn exits when it cannot bind
        if settings.transport != "native":  # started for relay runs: those still work
            log.warning("agent %s: no native protocols: %s:%d is held by %s", agent.node_id, host, port,
                        ports.holder(port))  # fmt: skip
            return
        raise PortTaken(
            f"agent {agent.node_id} ({agent.tool.name}) cannot listen on {host}:{port} for its native "
            f"protocols: it is held by {ports.holder(port)}. Move the agents (--base-port, PORT and "
            "AGENTS) or NATIVE_PORT_OFFSET"
        ) from exc
    async with asyncio.TaskGroup() as tasks:
        serving = tasks.create_task(server.serve(sockets=[sock]))
        await stop.wait()
        server.should_exit = True
        await serving
    log.info("agent %s: native server on %s:%d stopped", agent.node_id, host, port)


__all__ = ["HELLO", "NativeApp", "QueueOutbox", "serve_native"]
