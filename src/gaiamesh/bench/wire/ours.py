"""Ours: the same requests through our binding's client, as the relay's gateway makes it (for
each peer its own ``httpx.AsyncClient`` with the gateway's timeouts and pool, ``mesh/native/pool.py``,
and its protocol client), to our binding's server mounted as an agent's native server
mounts it, with an echo :class:`EchoEndpoint` in place of the agent.

The echo answers the blob it got as its one frame, with no decoding: what is measured is the
binding and its SDK, not the agent's packet handling.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from starlette.types import ASGIApp, Receive, Scope, Send

from ...errors import Unanswerable
from ...mesh.native import Peer, binding, pool
from ...settings import Settings, load_settings
from .floor import ECHO
from .floor import Send as SendOne


class EchoEndpoint:
    """An agent that answers every frame with the frame itself (``mesh.native.AgentEndpoint``)."""

    node_id = ECHO
    tool = ECHO
    description = "echoes every frame"
    consumes = frozenset({"events"})
    reads: frozenset[str] = frozenset()
    emits = frozenset({"events"})
    answers_text = False  # frames only: the bench sends packets
    replay_window_s = 0.0
    listens_on = "127.0.0.1"
    host_names: tuple[str, ...] = ()

    def __init__(self, acp_store: str = "keyed") -> None:
        self.acp_store = acp_store  # ACP_STORE (ours_app)

    async def answer_text(self, query: str, document: str | None) -> list[str]:
        raise Unanswerable("the echo takes packets only")

    async def answer(self, blob: bytes, inner: str) -> AsyncIterator[bytes]:
        yield blob


class Mounted:
    """The binding's app at its mount, as the agent's native server hands it requests: the path
    whole, ``root_path`` the mount (``agents/native.py``'s ``NativeApp``)."""

    def __init__(self, mount: str, app: ASGIApp) -> None:
        self.mount = mount
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # no lifespan, as on an agent: the bindings start what they need
        await self.app({**scope, "root_path": scope.get("root_path", "") + self.mount}, receive, send)


def ours_app(protocol: str, keys_dir: Path) -> ASGIApp:
    made = binding(protocol)
    # ACP_STORE as the bench's own process reads it (run.py records it in wire.json)
    return Mounted(made.mount, made.app(EchoEndpoint(load_settings().acp_store), keys_dir))


@asynccontextmanager
async def ours_client(protocol: str, url: str, settings: Settings, peers: int, keys_dir: Path) -> AsyncIterator[SendOne]:
    """Our binding's client of one peer at ``url`` (the tap's origin), on an HTTP client of its own
    made as the gateway makes each agent's (``pool.client``, sized to a team of ``peers``)."""
    made = binding(protocol)
    async with pool.client(settings, peers) as http:
        client = made.client(Peer(f"{url}{made.mount}", ECHO, "bench-wire", keys_dir, f"{url}{made.mount}"), http)
        await client.connect()

        async def send(blob: bytes) -> int:
            return sum([len(frame) async for frame in client.send(blob)])

        try:
            yield send
        finally:
            await client.aclose()
