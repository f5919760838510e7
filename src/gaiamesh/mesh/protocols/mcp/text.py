"""An MCP server someone else wrote, as one member of a team: the named tool called with the text
as its one string argument, the text content of its result out, with the official SDK's
``Client`` over its streamable HTTP client, started as the SDK starts it (``server/discover``,
else the initialize handshake: ``client.Handshake``) (``mesh/external/``).

Which argument takes the text is read from the tool's ``inputSchema`` (:func:`text_argument`):
its one required string property, else its one string property; a tool with no such argument
is refused when the run starts. Requests cross the relay's counting tap with the ``Host`` the
server's own address names (an MCP server checks it against DNS rebinding).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent

from ..native import TextClient, Undelivered
from .client import CLIENT_INFO, ThroughHttpx, describe


def text_argument(tool: str, schema: dict[str, Any]) -> str:
    """The argument of ``tool`` that takes the text, from its input ``schema``; :class:`Undelivered`
    when it has no single string argument."""
    properties: dict[str, Any] = schema.get("properties") or {}
    strings = [
        name for name, prop in properties.items() if isinstance(prop, dict) and prop.get("type") == "string"
    ]
    required = [name for name in schema.get("required") or [] if name in properties]
    if len(required) == 1 and required[0] in strings:
        return required[0]
    if len(strings) == 1 and all(name in strings for name in required):
        return strings[0]
    raise Undelivered(f"mcp: tool {tool!r} takes no single text argument (its arguments: "
                      f"{', '.join(sorted(properties)) or 'none'}, required: {', '.join(required) or 'none'})")  # fmt: skip


class _AsNamed(ThroughHttpx):
    """The SDK's requests through the tap, with the ``Host`` of the server's own address."""

    def __init__(self, http: httpx.AsyncClient, host: str) -> None:
        super().__init__(http)
        self.host = host

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        request.headers["Host"] = self.host
        return await super().handle_async_request(request)


class McpTextClient(TextClient):
    """One MCP session, held open by a task of its own (anyio's contexts must be left by the task
    that entered them; the relay asks from several)."""

    def __init__(self, url: str, through: str, http: httpx.AsyncClient, tool: str, host: str) -> None:
        self.url = url
        self.through = through
        self.tool = tool
        self.bridge = _AsNamed(http, host)
        self.argument = ""
        self.session: Client | None = None
        self._ready: asyncio.Future[None] | None = None
        self._closing = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def connect(self) -> None:
        if self._task is None:
            self._ready = asyncio.get_running_loop().create_future()
            self._task = asyncio.create_task(self._hold(self._ready), name=f"mcp-external-{self.url}")
        assert self._ready is not None
        try:
            await asyncio.shield(self._ready)
        except Undelivered:
            raise
        except MCPError as exc:
            raise Undelivered(f"mcp: {self.url}: error {exc.error.code}: {exc.error.message}") from exc
        except Exception as exc:  # the session could not open: the server's or the network's reason
            raise Undelivered(f"mcp: {self.url}: {describe(exc)}") from exc

    async def _hold(self, ready: asyncio.Future[None]) -> None:
        try:
            async with (
                httpx2.AsyncClient(transport=self.bridge, timeout=None, trust_env=False) as http2,
                Client(
                    streamable_http_client(self.through, http_client=http2),
                    mode="auto",
                    client_info=CLIENT_INFO,
                    cache=None,  # the one listing is read once, at connect
                ) as session,
            ):
                listing = await session.list_tools()
                found = {t.name: t for t in listing.tools}
                if self.tool not in found:
                    raise Undelivered(
                        f"mcp: {self.url} has no tool {self.tool!r} (it lists {', '.join(found)})"
                    )
                self.argument = text_argument(self.tool, found[self.tool].input_schema)
                self.session = session
                ready.set_result(None)
                await self._closing.wait()
        except Exception as exc:  # the session could not open, or its transport broke
            if not ready.done():
                ready.set_exception(exc)
        finally:
            self.session = None
            if not ready.done():
                ready.set_exception(Undelivered(f"mcp: the session at {self.url} closed while opening"))

    async def ask(self, text: str) -> str:
        await self.connect()
        session = self.session
        if session is None:
            raise Undelivered(f"mcp: the session at {self.url} has closed")
        try:
            result = await session.call_tool(self.tool, {self.argument: text})
        except MCPError as exc:
            raise Undelivered(
                f"mcp: tools/call {self.tool}: error {exc.error.code}: {exc.error.message}"
            ) from exc
        except Exception as exc:  # the transport broke under the call
            raise Undelivered(f"mcp: tools/call {self.tool}: {describe(exc)}") from exc
        if not isinstance(result, CallToolResult):
            raise Undelivered(
                f"mcp: tools/call {self.tool}: the server asked for input ({type(result).__name__})"
            )
        texts = [item.text for item in result.content if isinstance(item, TextContent)]
        if result.is_error:
            raise Undelivered(f"mcp: tools/call {self.tool}: the tool answered an error: {' '.join(texts)}")
        return "\n".join(texts)

    async def aclose(self) -> None:
        self._closing.set()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
