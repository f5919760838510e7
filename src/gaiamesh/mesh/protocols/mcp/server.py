"""``mcp``'s agent side: an ``MCPServer`` of the official SDK exposing the agent's one tool over
streamable HTTP, its session manager started by the first request (the wire: ``binding.py``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult, TextContent
from starlette.types import ASGIApp, Receive, Scope, Send

from ....errors import FrameError, Unanswerable
from ...frames import packet_schema
from ..base import canonical_json
from ..native import AgentEndpoint, about, takes, text_refused

CONSUMES_META = "gaiamesh/consumes"  # the tool's _meta key listing the packet types it works on
EMITS_META = "gaiamesh/emits"  # ... the packet types of its answers' frames
EMITS_SCHEMA_META = "gaiamesh/emits_schema"  # ... and the JSON schema of one of them
WHERE = f"the tool's inputSchema (a packet it takes) and its _meta {EMITS_SCHEMA_META!r} (one it emits)"
LOOPBACK = ("127.0.0.1", "localhost", "::1")  # what the SDK allows by itself, on a loopback agent


def input_schema(agent: AgentEndpoint) -> dict[str, Any]:
    """The tool's inputSchema: ``packet``, one packet of a type the agent takes (its JSON schema
    from the packet models, its definitions hoisted to the root where its references point);
    for a tool that answers text, ``query`` and ``document`` instead."""
    packet = packet_schema(takes(agent))
    defs = packet.pop("$defs", {})
    said = f"One Gaia Mesh packet of type {' or '.join(takes(agent))}, as a JSON object."
    properties: dict[str, Any] = {"packet": {**packet, "type": "object", "description": said}}
    if agent.answers_text:
        properties["query"] = {
            "type": "string",
            "description": "Plain text: what to look for (instead of a packet).",
        }
        properties["document"] = {
            "type": "string",
            "description": "The document to look in (none: the document of the newest run the agent holds).",
        }
    schema: dict[str, Any] = {"type": "object", "properties": properties, "$defs": defs}
    if not agent.answers_text:
        schema["required"] = ["packet"]
    return schema


async def _text(agent: AgentEndpoint, query: str | None, document: str | None) -> CallToolResult:
    """A call with no packet: the tool's answer to its text, or MCP's error result saying what
    to send."""
    if query is None and document is None:
        text = "; or 'query' (and 'document') as text" if agent.answers_text else ""
        raise ToolError(f"no packet: send 'packet', of type {' or '.join(takes(agent))} (its JSON schema is in {WHERE}){text}")
    if not agent.answers_text:
        raise ToolError(text_refused(agent, WHERE))
    if query is None:
        raise ToolError("a document with no query: send 'query', what to look for")
    try:
        texts = await agent.answer_text(query, document)
    except Unanswerable as exc:
        raise ToolError(str(exc)) from exc
    return CallToolResult(content=[TextContent(type="text", text=text) for text in texts])


def tool_function(agent: AgentEndpoint) -> Callable[..., Awaitable[CallToolResult]]:
    """The agent's tool as an ``MCPServer`` tool: the packet in, every frame the agent emits out,
    each also sent as a progress event the moment it is emitted when the caller asked for them
    (``report_progress`` does nothing for a call without a progress token); or, without a
    packet, a text request (:func:`_text`)."""

    async def call(
        ctx: Context,
        packet: dict[str, Any] | None = None,
        query: str | None = None,
        document: str | None = None,
    ) -> CallToolResult:
        if packet is None:
            return await _text(agent, query, document)
        if query is not None or document is not None:
            raise ToolError("send either a packet or a query (with its document), not both")
        frames: list[str] = []
        try:
            async for blob in agent.answer(canonical_json(packet), "json"):
                frames.append(blob.decode())
                await ctx.report_progress(len(frames), None, frames[-1])
        except FrameError as exc:  # MCP's own words for a call the tool refused: an error result
            raise ToolError(f"the packet was refused: {exc}") from exc
        return CallToolResult(content=[TextContent(type="text", text=frame) for frame in frames])

    call.__name__ = agent.tool
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
    """The agent's MCP server: one tool, named after the agent's and described with what it
    takes (:func:`input_schema`) and emits (in its ``_meta``)."""
    description = about(agent, WHERE)
    tool = Tool.from_function(
        tool_function(agent),
        name=agent.tool,
        description=description,
        meta={
            CONSUMES_META: sorted(agent.consumes),
            EMITS_META: sorted(agent.emits),
            EMITS_SCHEMA_META: packet_schema(agent.emits),
        },
        structured_output=False,  # the frames are the content items; no output schema
    )
    # The SDK writes the schema of the function's arguments, where a packet is any object; the
    # packet models say what it is. The arguments are still read by the function's own model.
    tool = tool.model_copy(update={"parameters": input_schema(agent)})
    # The SDK hands log_level to logging.basicConfig, which does nothing in a process whose
    # logging is already set up (the CLI's); elsewhere it keeps the SDK's INFO lines out.
    return MCPServer(
        f"gaiamesh-agent-{agent.node_id}", instructions=description, tools=[tool], log_level="WARNING"
    )


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
