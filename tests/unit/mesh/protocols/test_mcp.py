"""``mcp`` on its own wire: the SDK's ``MCPServer`` in uvicorn on 127.0.0.1, reached by our client
(the SDK's ``ClientSession``) and by the SDK's own ``Client`` as an MCP user would call it."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import mcp
import pytest
import uvicorn
from mcp.client.session import ClientSession as SdkClientSession
from mcp.client.streamable_http import streamable_http_client
from starlette.types import ASGIApp, Receive, Scope, Send

from gaiamesh.deploy.local import free_port
from gaiamesh.mesh.frames import PacketType, make_packet, parse_packet_json
from gaiamesh.mesh.native import Peer, Undelivered, binding
from gaiamesh.mesh.native.tap import Tap
from gaiamesh.mesh.protocols import canonical_json
from gaiamesh.mesh.protocols.mcp import client as mcp_client
from gaiamesh.mesh.protocols.mcp.binding import McpBinding
from gaiamesh.mesh.protocols.mcp.server import CONSUMES_META, SelfStartingApp

MOUNT = "/mcp"
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


class FakeAgent:
    """The agent side: echoes a packet back as its own, or emits two frames with the second held
    until the test opens ``gate``, or none; a blob that is not a packet raises FrameError."""

    node_id = "3"
    tool = "search_docs"
    description = "Finds the passages of the document that answer the question."
    consumes = frozenset({"doc_init", "subtask"})
    reads: frozenset[str] = frozenset()
    emits = frozenset({"doc_init", "subtask"})  # it echoes what it takes
    answers_text = False  # a text request gets the protocol's error (tests/unit/agents/test_described.py)
    host_names = ("agent-search",)  # what the deployment calls it (agents/native.py's host_names)

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.made: list[int] = []

    async def answer(self, blob: bytes, inner: str) -> AsyncIterator[bytes]:
        assert inner == "json"
        packet = parse_packet_json(blob).to_dict()  # FrameError for a blob that is not a packet
        count = {"none": 0, "two": 2}.get(packet["question"], 1)
        for n in range(1, count + 1):
            if n == 2:
                await asyncio.wait_for(self.gate.wait(), 5)
            self.made.append(n)
            yield canonical_json(
                {
                    **packet,
                    "src": self.node_id,
                    "seq": packet["seq"] + n,
                    "question": packet["question"].upper(),
                }
            )


def mounted(app: ASGIApp) -> ASGIApp:
    """The agent's native server as it hands a binding its requests (agents/native.py): the path
    whole, the mount as ``root_path`` (as Starlette's Mount does), no lifespan."""

    async def asgi(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        if path != MOUNT and not path.startswith(MOUNT + "/"):
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b"no such protocol"})
            return
        await app({**scope, "root_path": MOUNT}, receive, send)

    return asgi


class Agent:
    """A real uvicorn socket serving the binding's app for the fake agent."""

    def __init__(self, made: McpBinding, agent: FakeAgent, port: int) -> None:
        self.app = made.app(agent, Path("."))
        assert isinstance(self.app, SelfStartingApp)
        self.port = port
        config = uvicorn.Config(
            mounted(self.app), host="127.0.0.1", port=port, lifespan="off", log_level="warning"
        )
        self.server = uvicorn.Server(config)
        self.task: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{MOUNT}"

    async def start(self) -> Agent:
        self.task = asyncio.create_task(self.server.serve())
        while not self.server.started:
            assert not self.task.done(), "uvicorn did not start"
            await asyncio.sleep(0.02)
        return self

    async def stop(self) -> None:
        assert isinstance(self.app, SelfStartingApp) and self.task is not None
        self.server.should_exit = True
        self.server.force_exit = True  # the SDK's standing GET streams would hold a graceful exit
        await self.app.aclose()
        await self.task


@pytest.fixture
def fake() -> FakeAgent:
    return FakeAgent()


@pytest.fixture(params=["legacy", "auto"])  # auto: the default, server/discover
def made(request: pytest.FixtureRequest) -> McpBinding:
    found = binding("mcp")
    assert isinstance(found, McpBinding)
    found.handshake = request.param
    return found


@pytest.fixture
async def agent(made: McpBinding, fake: FakeAgent) -> AsyncIterator[Agent]:
    running = await Agent(made, fake, free_port()).start()
    yield running
    await running.stop()


@pytest.fixture
async def http() -> AsyncIterator[tuple[httpx.AsyncClient, list[str]]]:
    """The relay's client, recording what crossed it ("METHOD jsonrpc-method")."""
    seen: list[str] = []

    async def record(request: httpx.Request) -> None:
        try:
            method = json.loads(request.content).get("method", "") if request.content else ""
        except ValueError:
            method = "(not JSON)"
        seen.append(f"{request.method} {method}".strip())

    async with httpx.AsyncClient(timeout=httpx.Timeout(5.0), event_hooks={"request": [record]}) as client:
        yield client, seen


def peer(url: str) -> Peer:
    return Peer(base_url=url, node_id="3", run_id="r1", keys_dir=Path("."))


def frame(question: str = "where?", **kw: Any) -> bytes:
    packet = make_packet(PacketType.DOC_INIT, {"chunks": ["héllo ✓", "b"]}, run_id="r1", src="network", seq=4,
                         question=question, **kw)  # fmt: skip
    return canonical_json(packet.to_dict())


def answer(question: str, seq: int) -> bytes:
    return canonical_json(
        {**json.loads(frame(question)), "src": "3", "seq": seq, "question": question.upper()}
    )


async def collect(client: Any, blob: bytes) -> list[bytes]:
    return [f async for f in client.send(blob)]


# --- the binding ------------------------------------------------------------------------------
def test_the_binding_and_the_sdk_are_what_they_say() -> None:
    made = binding("mcp")
    assert (made.name, made.inner, made.mount, made.streams) == ("mcp", "json", "/mcp", True)
    # our client is gaiamesh.mesh.protocols.mcp.client; `import mcp` anywhere is still the SDK
    assert mcp_client.__name__ == "gaiamesh.mesh.protocols.mcp.client"
    assert Path(mcp.__file__).parent.name == "mcp" and "gaiamesh" not in Path(mcp.__file__).parts
    assert mcp_client.Client is mcp.Client and mcp.ClientSession is SdkClientSession


async def test_connect_opens_a_session_and_lists_the_one_tool(
    made: McpBinding, agent: Agent, http: tuple[httpx.AsyncClient, list[str]]
) -> None:
    client, seen = http
    ours = made.client(peer(agent.url), client)
    await ours.connect()
    await asyncio.sleep(0.1)  # the SDK opens its GET stream in the background
    if made.handshake == "legacy":
        assert sorted(seen) == sorted(
            ["POST initialize", "POST notifications/initialized", "GET", "POST tools/list"]
        )
    else:
        assert seen == ["POST server/discover", "POST tools/list"]
    assert (
        isinstance(ours, mcp_client.McpClient) and ours._open is not None and ours._open.tool == "search_docs"
    )
    await ours.aclose()


def of_2025(app: ASGIApp) -> ASGIApp:
    """A server of 2025 in front of the agent's app: it knows no ``server/discover`` and refuses
    any POST without a session but ``initialize``, as the SDK's stateful transport of 2025 did
    (400, "Missing session ID")."""

    async def asgi(scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers", []))
        if scope["type"] != "http" or scope["method"] != "POST" or b"mcp-session-id" in headers:
            await app(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            body, more = body + message.get("body", b""), message.get("more_body", False)
        if json.loads(body).get("method") != "initialize":
            error = {"jsonrpc": "2.0", "id": "server-error",
                     "error": {"code": -32600, "message": "Bad Request: Missing session ID"}}  # fmt: skip
            await send({"type": "http.response.start", "status": 400,
                        "headers": [(b"content-type", b"application/json")]})  # fmt: skip
            await send({"type": "http.response.body", "body": json.dumps(error).encode()})
            return
        read = False

        async def again() -> Any:
            nonlocal read
            if read:
                return await receive()
            read = True
            return {"type": "http.request", "body": body, "more_body": False}

        await app(scope, again, send)

    return asgi


async def test_a_server_of_2025_gets_the_initialize_handshake(
    fake: FakeAgent, http: tuple[httpx.AsyncClient, list[str]]
) -> None:
    """The default start (the SDK's mode auto) on a server that does not know server/discover:
    the SDK falls back to the 2025-11-25 session, and the frames go through it."""
    client, seen = http
    old = Agent(McpBinding(), fake, free_port())
    old.server = uvicorn.Server(uvicorn.Config(mounted(of_2025(old.app)), host="127.0.0.1", port=old.port,
                                               lifespan="off", log_level="warning"))  # fmt: skip
    await old.start()
    ours = McpBinding().client(peer(old.url), client)
    try:
        assert await collect(ours, frame()) == [answer("where?", 5)]
        posts = [x for x in seen if x.startswith("POST")]
        assert posts == ["POST server/discover", "POST initialize", "POST notifications/initialized",
                         "POST tools/list", "POST tools/call"]  # fmt: skip
    finally:
        await ours.aclose()
        await old.stop()


async def test_frames_round_trip_on_one_session(
    made: McpBinding, agent: Agent, http: tuple[httpx.AsyncClient, list[str]]
) -> None:
    client, seen = http
    ours = made.client(peer(agent.url), client)
    for question in ("where?", "and when?"):
        assert await collect(ours, frame(question)) == [answer(question, 5)]
    assert seen.count("POST tools/call") == 2 and seen.count("POST tools/list") == 1  # connected once
    await ours.aclose()


@pytest.mark.parametrize("stream", [False, True])
async def test_every_frame_in_order_and_none_for_a_packet_that_emits_none(
    made: McpBinding, agent: Agent, fake: FakeAgent, http: tuple[httpx.AsyncClient, list[str]], stream: bool
) -> None:
    fake.gate.set()
    ours = made.client(peer(agent.url), http[0], stream=stream)
    assert await collect(ours, frame("two")) == [answer("two", 5), answer("two", 6)]
    assert await collect(ours, frame("none")) == []
    await ours.aclose()


async def test_frames_sent_at_once_share_one_session(
    made: McpBinding, agent: Agent, http: tuple[httpx.AsyncClient, list[str]]
) -> None:
    client, seen = http
    ours = made.client(peer(agent.url), client)
    questions = [f"q{n}?" for n in range(5)]
    got = await asyncio.gather(*(collect(ours, frame(q)) for q in questions))
    assert got == [[answer(q, 5)] for q in questions]
    assert seen.count("POST tools/list") == 1 and seen.count("POST tools/call") == 5
    await ours.aclose()


@pytest.mark.parametrize("stream", [False, True])
async def test_calls_after_the_first_reuse_their_connection(
    made: McpBinding, agent: Agent, http: tuple[httpx.AsyncClient, list[str]], stream: bool
) -> None:
    """The SDK's client closes a call's SSE answer at its result, before the body's end (python-sdk
    #3281), which cost a new connection per call; our transport reads the rest, so HTTP/1.1's
    keep-alive serves the calls one after another on the relay's pool (the tap counts them)."""
    tap = Tap("127.0.0.1", agent.port)
    await tap.start()
    ours = made.client(peer(f"http://127.0.0.1:{tap.port}{MOUNT}"), http[0], stream=stream)
    try:
        await ours.connect()
        for n in range(6):
            assert await collect(ours, frame(f"q{n}?")) == [answer(f"q{n}?", 5)]
    finally:
        await ours.aclose()
        await tap.close()
    totals = tap.books.totals()
    assert totals.requests >= 6 + 2  # the calls and the session's own
    # not one per call: a 2025 session's, its GET stream, the calls'; at 2026-07-28 one for all
    assert totals.connections <= (3 if made.handshake == "legacy" else 1), totals


async def test_the_session_manager_also_runs_under_a_lifespan(fake: FakeAgent) -> None:
    app = McpBinding().app(fake, Path("."))
    assert isinstance(app, SelfStartingApp)
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="on", log_level="warning")
    )
    serving = asyncio.create_task(server.serve())
    while not server.started:
        assert not serving.done(), "uvicorn did not start"
        await asyncio.sleep(0.02)
    async with mcp.Client(f"http://127.0.0.1:{port}/") as user:  # the app's own path is "/"
        result = await user.call_tool("search_docs", {"packet": json.loads(frame())})
        assert [item.text for item in result.content if isinstance(item, mcp.types.TextContent)] == [
            answer("where?", 5).decode()
        ]
    server.should_exit = True
    await asyncio.wait_for(serving, 10)  # the lifespan's shutdown stopped the session manager
    assert app._running is not None and app._running.done()


async def test_streaming_delivers_the_first_frame_before_the_second_is_made(
    made: McpBinding, agent: Agent, fake: FakeAgent, http: tuple[httpx.AsyncClient, list[str]]
) -> None:
    ours = made.client(peer(agent.url), http[0], stream=True)
    frames = ours.send(frame("two"))
    assert await asyncio.wait_for(anext(frames), 5) == answer("two", 5)
    assert fake.made == [1]  # the second frame is not made until the first has arrived
    fake.gate.set()
    assert [f async for f in frames] == [answer("two", 6)]
    await ours.aclose()


# --- an MCP user's own client -----------------------------------------------------------------
@pytest.fixture
async def served(fake: FakeAgent) -> AsyncIterator[Agent]:
    running = await Agent(McpBinding(), fake, free_port()).start()
    yield running
    await running.stop()


@pytest.mark.parametrize("mode", ["auto", "legacy"])  # auto: the SDK's default, server/discover first
async def test_the_sdks_own_client_lists_and_calls_the_tool(served: Agent, mode: str) -> None:
    async with mcp.Client(served.url, mode=mode) as user:
        (tool,) = (await user.list_tools()).tools
        assert tool.name == "search_docs" and tool.description.startswith(FakeAgent.description.rstrip("."))
        assert tool.input_schema["required"] == ["packet"]  # no text: a packet or nothing
        assert tool.input_schema["properties"]["packet"]["type"] == "object"
        assert set(tool.input_schema["properties"]) == {"packet"}
        assert (tool.meta or {})[CONSUMES_META] == ["doc_init", "subtask"]
        result = await user.call_tool("search_docs", {"packet": json.loads(frame())})
        assert not result.is_error and result.structured_content is None
        assert [item.text for item in result.content if isinstance(item, mcp.types.TextContent)] == [
            answer("where?", 5).decode()
        ]


async def test_the_sdks_client_at_the_documented_url_needs_no_redirect(served: Agent) -> None:
    """The SDK's streamable HTTP client at ``.../mcp`` (no slash), as an MCP user is told: every
    request is answered where it was sent, none by a 307 to ``/mcp/``."""
    answered: list[tuple[int, str]] = []

    async def seen(response: httpx2.Response) -> None:
        answered.append((response.status_code, response.request.url.path))

    async with (
        httpx2.AsyncClient(event_hooks={"response": [seen]}) as http2,
        streamable_http_client(served.url, http_client=http2) as (read, write),
        SdkClientSession(read, write) as session,
    ):
        await session.initialize()
        listed = await session.list_tools()
    assert [tool.name for tool in listed.tools] == ["search_docs"]
    assert answered and {path for _, path in answered} == {MOUNT}
    assert all(status < 300 for status, _ in answered), answered


async def test_a_deployment_name_in_the_host_is_served_and_a_strange_one_refused(
    served: Agent, http: tuple[httpx.AsyncClient, list[str]]
) -> None:
    client, initialize = http[0], {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    for host in ("agent-search:10000", "agent-search", "localhost:10000"):
        named = await client.post(served.url, headers={**ACCEPT, "host": host}, json=initialize)
        assert named.status_code != 421 and named.status_code < 500, (host, named.status_code)
    stranger = await client.post(
        served.url, headers={**ACCEPT, "host": "rebound.example:10000"}, json=initialize
    )
    assert stranger.status_code == 421


# --- bad input --------------------------------------------------------------------------------
async def test_bad_input_gets_mcps_own_errors_and_the_server_keeps_serving(
    made: McpBinding, agent: Agent, http: tuple[httpx.AsyncClient, list[str]]
) -> None:
    client = http[0]
    ours = made.client(peer(agent.url), client)
    # a packet the agent refuses (FrameError): the tool's error result, in our client's words
    with pytest.raises(Undelivered, match=r"tools/call search_docs: the tool answered an error: .*"
                                          r"the packet was refused: unknown packet type 'telegram'"):  # fmt: skip
        await collect(ours, canonical_json({"type": "telegram", "run_id": "r1"}))
    with pytest.raises(Undelivered, match="the frame to send is not JSON"):
        await collect(ours, b"\xff not json")
    async with mcp.Client(agent.url) as user:
        for name, arguments, said in [
            ("telegraph", {"packet": {}}, "Unknown tool: telegraph"),
            ("search_docs", {}, r"no packet: send 'packet', of type doc_init or subtask \(its JSON schema is in"),
            ("search_docs", {"query": "where?"}, "the search_docs tool takes packets, not text: send one packet"),
            ("search_docs", {"packet": "a string"}, "Input should be a valid dictionary"),
            ("search_docs", {"packet": {"type": "doc_init"}}, "the packet was refused: invalid packet field"),
        ]:
            result = await user.call_tool(name, arguments)
            assert result.is_error and isinstance(result.content[0], mcp.types.TextContent)
            assert re.search(said, result.content[0].text), result.content[0].text
    # not JSON-RPC at all, and a method MCP does not have: JSON-RPC errors
    malformed = await client.post(agent.url, content=b"{not json", headers=ACCEPT)
    assert malformed.status_code == 400 and malformed.json()["error"]["code"] == -32700
    modern = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/frobnicate"}
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "probe", "version": "1"}}  # fmt: skip
    unknown = await client.post(agent.url, headers={**ACCEPT, **modern},
                                json={"jsonrpc": "2.0", "id": 7, "method": "tools/frobnicate", "params": {"_meta": meta}})  # fmt: skip
    assert unknown.json()["error"] == {
        "code": -32601,
        "message": "Method not found",
        "data": "tools/frobnicate",
    }
    no_session = await client.post(
        agent.url, headers=ACCEPT, json={"jsonrpc": "2.0", "id": 8, "method": "tools/list"}
    )
    assert no_session.status_code == 400 and "Missing session ID" in no_session.json()["error"]["message"]
    elsewhere = await client.post(agent.url, headers={**ACCEPT, "host": "agent.example:80"}, json={})
    assert elsewhere.status_code == 421  # the SDK's DNS-rebinding check: loopback and the agent's names
    # and it still serves
    assert await collect(ours, frame()) == [answer("where?", 5)]
    await ours.aclose()


# --- giving up, and the session after a restart -------------------------------------------------
async def test_an_agent_that_is_not_there_is_undelivered_at_once(
    made: McpBinding, http: tuple[httpx.AsyncClient, list[str]]
) -> None:
    ours = made.client(peer(f"http://127.0.0.1:{free_port()}{MOUNT}"), http[0])
    with pytest.raises(Undelivered, match=f"MCP connect \\({made.handshake}\\) at http://127.0.0.1:.*ConnectError"):
        await asyncio.wait_for(ours.connect(), 10)
    with pytest.raises(Undelivered, match="ConnectError"):
        await asyncio.wait_for(collect(ours, frame()), 10)
    await ours.aclose()


async def test_frames_sent_while_the_agent_is_down_are_lost_and_later_ones_go_through(
    made: McpBinding, fake: FakeAgent, http: tuple[httpx.AsyncClient, list[str]]
) -> None:
    first = await Agent(made, fake, free_port()).start()
    ours = made.client(peer(first.url), http[0])
    assert await collect(ours, frame()) == [answer("where?", 5)]
    await first.stop()
    with pytest.raises(Undelivered, match="ConnectError"):  # nobody listens: lost, and said so
        await asyncio.wait_for(collect(ours, frame()), 10)
    again = await Agent(made, fake, first.port).start()
    assert await asyncio.wait_for(collect(ours, frame("again?")), 10) == [answer("again?", 5)]
    await ours.aclose()
    await again.stop()


async def test_a_session_the_restarted_agent_does_not_know_is_opened_anew_and_the_frame_resent(
    made: McpBinding, fake: FakeAgent, http: tuple[httpx.AsyncClient, list[str]]
) -> None:
    client, seen = http
    first = await Agent(made, fake, free_port()).start()
    ours = made.client(peer(first.url), client)
    assert await collect(ours, frame()) == [answer("where?", 5)]
    await first.stop()
    again = await Agent(made, fake, first.port).start()  # a new server: it knows no session
    seen.clear()
    assert await asyncio.wait_for(collect(ours, frame("again?")), 10) == [answer("again?", 5)]
    calls = [x for x in seen if x.startswith("POST")]
    if made.handshake == "legacy":  # 404 for the old session, a new one, the frame once more
        assert calls == ["POST tools/call", "POST initialize", "POST notifications/initialized",
                         "POST tools/list", "POST tools/call"]  # fmt: skip
    else:  # no session in the 2026-07-28 revision: the restart is not seen
        assert calls == ["POST tools/call"]
    await ours.aclose()
    await again.stop()
