"""``mcp``'s agent side: an ``MCPServer`` of the official SDK exposing the agent's one tool over
streamable HTTP, its session manager started by the first request (the wire: ``binding.py``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult, TextContent
from pydantic import Field
from starlette.types import ASGIApp, Receive, Scope, Send

from ....errors import FrameError
from ..base import canonical_json
from ..native import AgentEndpoint

CONSUMES_META = "gaiamesh/consumes"  # the tool's _meta key listing the packet types it works on
LOOPBACK = ("127.0.0.1", "localhost", "::1")  # what the SDK allows by itself, on a loopback agent

PacketArgument = Annotated[
    dict[str, Any],
    Field(description="One Gaia Mesh packet (a JSON object with its type, run_id, src, payload...)"),
]


def tool_function(agent: AgentEndpoint) -> Callable[..., Awaitable[CallToolResult]]:
    """The agent's tool as an ``MCPServer`` tool: the packet in, every frame the agent emits out,
    each also sent as a progress event the moment it is emitted when the caller asked for them
    (``report_progress`` does nothing for a call without a progress token)."""

    async def call(packet: PacketArgument, ctx: Context) -> CallToolResult:
        frames: list[str] = []
        try:
            async for blob in agent.answer(canonical_json(packet), "json"):
                frames.append(blob.decode())
                await ctx.report_progress(len(frames), None, frames[-1])
        except FrameError as exc:  # MCP's own words for a call the tool refused: an error result
            raise ToolError(f"the packet was refused: {exc}") from exc
        return CallToolResult(content=[TextContent(type="text", text=frame) for frame in frames])

    call.__name__ = agent.tool  # the SDK names the input schema after it ("<tool>Arguments")
    return call


class SelfStartingApp:
    """The SDK's Starlette app with its session manager started by the first request, and its
    endpoint at the mount with or without the slash (:func:`at_the_mount`).

    The SDK starts the manager in its app's lifespan, and the agent's native server runs none
    (it builds each binding's app when first asked for it). A lifespan, if one is run, starts
    and stops it the same way."""

    def __init__(self, server: MCPServer, app: ASGIApp) -> None:
        self.server = server
        self.app = app
        self._running: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        await self.start()
        await self.app(at_the_mount(scope), receive, send)

    async def start(self) -> None:
        if self._ready.is_set():
            return
        if self._running is None:
            self._running = asyncio.create_task(self._run(), name=f"mcp-sessions-{self.server.name}")
        ready = asyncio.create_task(self._ready.wait())
        await asyncio.wait([ready, self._running], return_when=asyncio.FIRST_COMPLETED)
        ready.cancel()
        if self._running.done():  # it ended before it was ready: its error is this request's
            self._running.result()
            raise RuntimeError("the MCP session manager stopped")

    async def _run(self) -> None:
        async with self.server.session_manager.run():
            self._ready.set()
            await self._stop.wait()

    async def aclose(self) -> None:
        """Stop the session manager (its sessions end)."""
        self._stop.set()
        if self._running is not None:
            await self._running

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await self.start()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return


def server_for(agent: AgentEndpoint) -> MCPServer:
    """The agent's MCP server: one tool, named and described as the agent's, with the packet
    types it consumes in the tool's ``_meta``."""
    # The SDK hands log_level to logging.basicConfig, which does nothing in a process whose
    # logging is already set up (the CLI's); elsewhere it keeps the SDK's INFO lines out.
    server: MCPServer = MCPServer(
        f"gaiamesh-agent-{agent.node_id}", instructions=agent.description, log_level="WARNING"
    )
    server.add_tool(
        tool_function(agent),
        name=agent.tool,
        description=agent.description,
        meta={CONSUMES_META: sorted(agent.consumes)},
        structured_output=False,  # the frames are the content items; no output schema
    )
    return server


def transport_security(listens_on: str, names: tuple[str, ...]) -> TransportSecuritySettings | None:
    """The SDK's DNS-rebinding check for an agent listening on ``listens_on``: on a loopback
    agent, the Host (and a browser's Origin) may name loopback or one of the deployment's names
    for the agent (``names``: its host name, its configured host, the hosts AGENTS names), on any
    port; any other name gets the SDK's 421. An agent on a network address (a container's
    0.0.0.0) keeps the SDK's own choice there, no check: its callers name it as their network
    does (a service's name, a replica's address), which it cannot list."""
    if listens_on not in LOOPBACK:
        return None
    hosts = [f"[{n}]" if ":" in n else n for n in dict.fromkeys([*LOOPBACK, *names]) if n]
    return TransportSecuritySettings(
        allowed_hosts=[*hosts, *(f"{h}:*" for h in hosts)],
        allowed_origins=[
            f"{scheme}://{h}{port}" for h in hosts for scheme in ("http", "https") for port in ("", ":*")
        ],
    )


def at_the_mount(scope: Scope) -> Scope:
    """A request for the mount itself (``/mcp``, the URL an MCP user is given) as one for its
    root (``/mcp/``). The SDK's route is its app's ``/``, and the mount alone reaches it as an
    empty path, which Starlette answers with a 307 to ``/mcp/``: two requests for every call."""
    if scope["type"] != "http" or scope["path"] != scope.get("root_path", ""):
        return scope
    rooted = {**scope, "path": scope["path"] + "/"}
    if scope.get("raw_path") is not None:
        rooted["raw_path"] = scope["raw_path"] + b"/"
    return rooted
