"""``mcp``'s relay side: the official SDK's ``Client`` over its streamable HTTP client, riding on
the relay's ``httpx.AsyncClient`` (the wire: ``binding.py``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable
from typing import Any, Literal

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import MCP_SESSION_ID, streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CONNECTION_CLOSED, CallToolResult, Implementation, ListToolsResult, TextContent

from ..native import NativeClient, Peer, Undelivered

CLIENT_INFO = Implementation(name="gaiamesh-relay", version="1")
DRAIN_S = 1.0  # how long closing a POST's answer waits for the rest of its body (_Body)

# How the session starts, in the SDK's Client's words: "auto" (its default) asks server/discover
# (revision 2026-07-28: no session, no standing GET, every request self-contained) and falls back
# to the initialize handshake (2025-11-25) on a server that does not know it; "legacy" always
# does the handshake.
Handshake = Literal["auto", "legacy"]


def _as_httpx2(exc: httpx.HTTPError) -> httpx2.HTTPError:
    """The httpx2 error of the same name (httpx2 keeps httpx's names), for the SDK's handlers."""
    kind = getattr(httpx2, type(exc).__name__, None)
    if not (isinstance(kind, type) and issubclass(kind, httpx2.TransportError)):
        kind = httpx2.TransportError
    made: httpx2.HTTPError = kind(str(exc) or type(exc).__name__)
    return made


class _Body(httpx2.AsyncByteStream):
    """An httpx response's body, as the bytes came off the socket, for an httpx2 response.

    The SDK's client stops reading a call's SSE answer at its result event and closes it, before
    the server's end of the body (python-sdk issue #3281): httpcore then closes the connection,
    and every call opened a new one. A POST's answer ends right after its result, so closing it
    reads what is left first (at most ``DRAIN_S``) and the connection goes back to the pool, as
    HTTP/1.1 keep-alive intends; the standing GET stream is closed as it is."""

    def __init__(self, response: httpx.Response, drain: bool) -> None:
        self.response = response
        self.drain = drain
        self._raw = response.aiter_raw()  # one iterator: what the SDK left unread is read from it

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._raw:
                yield chunk
        except httpx.HTTPError as exc:
            raise _as_httpx2(exc) from exc

    async def aclose(self) -> None:
        if self.drain and not self.response.is_closed:
            # a body the server does not end in time, or a broken one, closes its connection as before
            with contextlib.suppress(httpx.HTTPError, TimeoutError, RuntimeError):
                async with asyncio.timeout(DRAIN_S):
                    async for _ in self._raw:
                        pass
        await self.response.aclose()


class ThroughHttpx(httpx2.AsyncBaseTransport):
    """An httpx2 transport that sends every request with the relay's ``httpx.AsyncClient``.

    mcp 2's client takes only an ``httpx2.AsyncClient``; the relay's pool, limits and timeouts
    are an ``httpx.AsyncClient``'s (a harness setting recorded with the run), so the SDK's
    requests go out through it, byte for byte as httpx2 made them (its headers and body), with no
    redirect followed (the SDK follows same-origin ones itself)."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http
        # The server answered 404 to a request naming the session: it no longer knows it (the
        # spec's signal to start a new one). The SDK turns that into a JSON-RPC error whose
        # words are the server's, so the status is kept here, where it is seen.
        self.session_lost = False
        # What the last request that failed saw (the SDK reports a broken request as "Connection
        # closed" and drops the cause); cleared by the next answer.
        self.failure: str | None = None

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        # A request made whole here, not by build_request(), which would merge in the httpx
        # client's own headers and cookies (httpx2's client has set its own): the same bytes, and
        # 0.16 ms less of the relay's CPU a request (measured: "mcp's session" in
        # docs/results/2026-12-05-wire-floor.md).
        out = httpx.Request(request.method, str(request.url), headers=request.headers.raw, content=await request.aread())
        try:
            response = await self.http.send(out, stream=True, follow_redirects=False)
        except httpx.HTTPError as exc:
            self.failure = f"{type(exc).__name__}: {exc}"
            raise _as_httpx2(exc) from exc
        self.failure = None
        if response.status_code == 404 and MCP_SESSION_ID in request.headers:
            self.session_lost = True
        return httpx2.Response(
            response.status_code,
            headers=response.headers.raw,
            stream=_Body(response, drain=request.method == "POST"),
            extensions={"http_version": response.http_version.encode()},
        )

    async def aclose(self) -> None:
        """The relay's client is the relay's to close."""


class _Open:
    """One MCP session, held open by a task of its own: anyio's contexts (the SDK's transport
    and session) must be left by the task that entered them, and the relay may connect, send
    and close from different tasks."""

    def __init__(self, url: str, http: httpx.AsyncClient, handshake: Handshake) -> None:
        self.url = url
        self.http = http
        self.handshake = handshake
        self.bridge = ThroughHttpx(http)
        self.session: Client | None = None
        self.tool = ""
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._closing = asyncio.Event()
        self._task = asyncio.create_task(self._hold(), name=f"mcp-session-{url}")

    async def opened(self) -> None:
        """Wait for the handshake and the tool list; raise what ended them."""
        await asyncio.shield(self._ready)

    async def _hold(self) -> None:
        try:
            async with (
                httpx2.AsyncClient(transport=self.bridge, timeout=None, trust_env=False) as http2,
                Client(
                    streamable_http_client(self.url, http_client=http2),
                    mode=self.handshake,
                    client_info=CLIENT_INFO,
                    cache=None,  # the one listing is read once, at connect
                ) as session,
            ):
                self.tool = _the_tool(await session.list_tools())
                self.session = session
                self._ready.set_result(None)
                await self._closing.wait()
        except Exception as exc:  # the session could not open, or its transport broke
            if not self._ready.done():
                self._ready.set_exception(exc)
        finally:
            self.session = None
            if not self._ready.done():
                self._ready.set_exception(Undelivered(f"MCP session at {self.url} closed while opening"))

    async def aclose(self) -> None:
        self._closing.set()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


def _the_tool(listing: ListToolsResult) -> str:
    names = [tool.name for tool in listing.tools]
    if len(names) != 1:
        raise Undelivered(f"tools/list: an agent serves one tool, this server lists {names}")
    name: str = names[0]
    return name


def _frames(result: CallToolResult, tool: str) -> list[bytes]:
    texts = [item.text for item in result.content if isinstance(item, TextContent)]
    if result.is_error:
        raise Undelivered(f"tools/call {tool}: the tool answered an error: {' '.join(texts)}")
    if len(texts) != len(result.content):
        kinds = sorted({item.type for item in result.content})
        raise Undelivered(f"tools/call {tool}: expected text content, one item per frame; got {kinds}")
    return [text.encode() for text in texts]


def _packet(blob: bytes) -> dict[str, Any]:
    try:
        packet = json.loads(blob)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise Undelivered(f"mcp: the frame to send is not JSON ({exc})") from exc
    if not isinstance(packet, dict):
        raise Undelivered("mcp: the frame to send is not a JSON object")
    return packet


class McpClient(NativeClient):
    def __init__(self, peer: Peer, http: httpx.AsyncClient, stream: bool, handshake: Handshake) -> None:
        # The MCP endpoint is the mount's root: the relay names it "/mcp/", as it always has (the
        # agent answers "/mcp" alike, with no redirect: server.at_the_mount), so its bytes stay
        # those of earlier results.
        self.url = peer.base_url + "/"
        self.http = http
        self.stream = stream
        self.handshake = handshake
        self._open: _Open | None = None
        self._opening = asyncio.Lock()  # frames sent at once open one session, not one each

    async def connect(self) -> None:
        async with self._opening:
            await self._connect()

    async def _connect(self) -> None:
        if self._open is not None and self._open.session is not None and not self._open.bridge.session_lost:
            return
        await self._drop()  # none yet, or its transport broke, or the server forgot it: a new one
        self._open = _Open(self.url, self.http, self.handshake)
        try:
            await self._open.opened()
        except Undelivered:
            raise
        except MCPError as exc:
            raise Undelivered(
                f"MCP connect ({self.handshake}) at {self.url}: error {exc.error.code}: {exc.error.message}"
            ) from exc
        except Exception as exc:
            raise Undelivered(f"MCP connect ({self.handshake}) at {self.url}: {describe(exc)}") from exc

    async def send(self, blob: bytes) -> AsyncIterator[bytes]:
        packet = _packet(blob)
        for attempt in (1, 2):
            await self.connect()
            assert self._open is not None
            opened, yielded = self._open, False
            try:
                async for frame in self._call(opened, packet):
                    yielded = True
                    yield frame
                return
            except Undelivered:
                # A 404 for the session: no handler saw the frame, so it goes once more in a new
                # session (connect() opens it); anything else is the frame's end.
                if yielded or attempt == 2 or not opened.bridge.session_lost:
                    raise

    async def _call(self, opened: _Open, packet: dict[str, Any]) -> AsyncIterator[bytes]:
        session, tool, bridge = opened.session, opened.tool, opened.bridge
        if session is None:  # its transport broke since connect(): the next frame opens another
            raise Undelivered(f"tools/call {tool}: the MCP session at {self.url} has closed")
        if not self.stream:
            result = await _checked(session.call_tool(tool, {"packet": packet}), tool, bridge)
            for frame in _frames(result, tool):
                yield frame
            return
        async for frame in _streamed(session, tool, packet, bridge):
            yield frame

    async def _drop(self) -> None:
        if self._open is not None:
            opened, self._open = self._open, None
            await opened.aclose()

    async def aclose(self) -> None:
        await self._drop()


async def _checked(call: Awaitable[CallToolResult], tool: str, bridge: ThroughHttpx) -> CallToolResult:
    """The call's result, or the reason it has none in our words."""
    try:
        return await call
    except MCPError as exc:
        saw = f" ({bridge.failure})" if exc.error.code == CONNECTION_CLOSED and bridge.failure else ""
        raise Undelivered(f"tools/call {tool}: MCP error {exc.error.code}: {exc.error.message}{saw}") from exc
    except Exception as exc:  # the transport broke under the call
        raise Undelivered(f"tools/call {tool}: {describe(exc)}") from exc


async def _streamed(
    session: Client, tool: str, packet: dict[str, Any], bridge: ThroughHttpx
) -> AsyncIterator[bytes]:
    """Frames as their progress events arrive, then any the result holds beyond them."""
    arrived: asyncio.Queue[bytes | None] = asyncio.Queue()

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        if message is not None:
            arrived.put_nowait(message.encode())

    call = asyncio.create_task(
        _checked(session.call_tool(tool, {"packet": packet}, progress_callback=progress), tool, bridge)
    )
    call.add_done_callback(lambda _: arrived.put_nowait(None))
    streamed: list[bytes] = []
    try:
        while (frame := await arrived.get()) is not None:
            streamed.append(frame)
            yield frame
        frames = _frames(call.result(), tool)
    finally:
        if not call.done():  # the caller stopped reading: the call is abandoned (the SDK cancels it)
            call.cancel()
            with contextlib.suppress(asyncio.CancelledError, Undelivered):
                await call
    if frames[: len(streamed)] != streamed:
        raise Undelivered(f"tools/call {tool}: the result's frames differ from the progress events'")
    for frame in frames[len(streamed) :]:
        yield frame


def describe(exc: BaseException) -> str:
    """An error in one line; an exception group (anyio's task groups raise them) by its first leaf."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"
