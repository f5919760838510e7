"""``acp`` on its own wire: acp-sdk's own app on a real uvicorn socket, mounted at ``/acp`` the way
the agent's native server mounts it (no lifespan), called by our client (acp-sdk's ``Client``)
and by the SDK's client used plainly, as an ACP user would."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from acp_sdk.client import Client
from acp_sdk.models import Message, MessagePart, RunStatus
from starlette.types import ASGIApp, Receive, Scope, Send

from gaiamesh.deploy.local import free_port
from gaiamesh.errors import FrameError
from gaiamesh.mesh.frames import PacketType, make_packet, parse_packet_json
from gaiamesh.mesh.native import NativeClient, Peer, Undelivered, binding
from gaiamesh.mesh.protocols import canonical_json
from gaiamesh.mesh.protocols.acp.binding import AcpClient

BINDING = binding("acp")
JSON = {"Content-Type": "application/json"}


def packet(question: str, seq: int = 1) -> bytes:
    made = make_packet(
        PacketType.DOC_INIT, {"chunks": ["a chunk"]}, run_id="r1", src="network", seq=seq, question=question
    )
    return canonical_json(made.to_dict())


class FakeAgent:
    """The agent side: answers by the packet's question (echo / two / none / hang)."""

    node_id = "7"
    tool = "echo"
    description = "echoes a packet back with the next seq"
    consumes = frozenset({"doc_init", "subtask"})
    reads: frozenset[str] = frozenset()
    emits = frozenset({"doc_init", "subtask"})  # it echoes what it takes
    answers_text = False  # a text request gets the protocol's error (tests/unit/agents/test_described.py)
    acp_store = "keyed"

    def __init__(self) -> None:
        self.release = asyncio.Event()  # "two": the second frame is made only once this is set
        self.second_made = False

    async def answer(self, blob: bytes, inner: str) -> AsyncIterator[bytes]:
        assert inner == "json"
        got = parse_packet_json(blob)  # raises FrameError before anything is yielded
        echo = got.model_copy(update={"src": self.node_id, "seq": got.seq + 1}).to_dict()
        if got.question == "echo":
            yield canonical_json(echo)
        elif got.question == "two":
            yield canonical_json(echo)
            await asyncio.wait_for(self.release.wait(), 5)
            self.second_made = True
            yield canonical_json({**echo, "seq": got.seq + 2})
        elif got.question == "hang":
            await asyncio.sleep(3600)
        elif got.question == "bad":
            raise FrameError("not a packet this agent takes")


class Mounted:
    """The agent's native server in miniature: the binding's app at its mount, no lifespan."""

    def __init__(self, mount: str, app: ASGIApp) -> None:
        self.mount, self.app = mount, app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        if not path.startswith(self.mount + "/"):
            body = b"no native protocol here\n"
            await send(
                {"type": "http.response.start", "status": 404, "headers": [(b"content-type", b"text/plain")]}
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self.app({**scope, "root_path": self.mount, "path": path[len(self.mount) :]}, receive, send)


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield  # pytest keeps its signal handlers


class Proxy:
    """A counting TCP proxy: connections accepted and bytes each way."""

    def __init__(self, port: int) -> None:
        self.target, self.connections, self.up, self.down = port, 0, 0, 0
        self.server: asyncio.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port: int = self.server.sockets[0].getsockname()[1]
        return port

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, up: bool) -> None:
            with contextlib.suppress(ConnectionError):
                while data := await src.read(65536):
                    if up:
                        self.up += len(data)
                    else:
                        self.down += len(data)
                    dst.write(data)
                    await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, up_writer, True), pipe(up_reader, writer, False))

    def take(self) -> tuple[int, int]:
        counted = self.up, self.down
        self.up = self.down = 0
        return counted

    async def close(self) -> None:
        assert self.server is not None
        self.server.close()


@pytest.fixture
async def agent() -> AsyncIterator[tuple[FakeAgent, str]]:
    """A fake agent behind the binding's app on 127.0.0.1; yields it and the server's URL."""
    fake = FakeAgent()
    port = free_port()
    app = Mounted(BINDING.mount, BINDING.app(fake, Path("keys")))
    server = _Server(
        uvicorn.Config(
            app, host="127.0.0.1", port=port, lifespan="off", log_level="warning", timeout_graceful_shutdown=1
        )
    )
    serving = asyncio.create_task(server.serve())
    while not server.started:
        assert not serving.done(), "the server did not start"
        await asyncio.sleep(0.01)
    yield fake, f"http://127.0.0.1:{port}"
    server.should_exit = True
    await serving


def ours(url: str, http: httpx.AsyncClient, stream: bool = False) -> AcpClient:
    client = BINDING.client(Peer(url + BINDING.mount, "7", "r1", Path("keys")), http, stream=stream)
    assert isinstance(client, AcpClient)
    return client


async def sent(client: NativeClient, blob: bytes) -> list[dict[str, object]]:
    return [json.loads(frame) async for frame in client.send(blob)]


def test_binding_names() -> None:
    assert (BINDING.name, BINDING.inner, BINDING.mount, BINDING.streams) == ("acp", "json", "/acp", True)


async def test_manifest_lists_the_tool(agent: tuple[FakeAgent, str]) -> None:
    _, url = agent
    async with Client(base_url=url + "/acp") as sdk:
        listed = [a async for a in sdk.agents()]
        one = await sdk.agent(name="echo")
    assert [a.name for a in listed] == ["echo"] and one.name == "echo"
    assert one.description.startswith(FakeAgent.description)
    assert one.input_content_types == one.output_content_types == ["application/json"]  # no text
    assert one.metadata.capabilities[0].name == "echo"
    mesh = one.metadata.annotations.model_dump()["gaiamesh"]
    assert (mesh["node_id"], mesh["consumes"], mesh["emits"]) == ("7", ["doc_init", "subtask"], ["doc_init", "subtask"])
    assert mesh["takes_schema"]["discriminator"]["propertyName"] == "type"


@pytest.mark.parametrize("stream", [False, True])
async def test_round_trip_through_our_client(agent: tuple[FakeAgent, str], stream: bool) -> None:
    _, url = agent
    async with httpx.AsyncClient(timeout=5) as http:
        client = ours(url, http, stream)
        await client.connect()
        assert client.agent == "echo"
        frames = [frame async for frame in client.send(packet("echo", seq=4))]
        assert len(frames) == 1
        got = json.loads(frames[0])
        assert (got["src"], got["seq"], got["question"]) == ("7", 5, "echo")
        assert frames[0] == canonical_json(got)  # canonical bytes
        assert await sent(client, packet("none")) == []  # a packet the agent only reads
        await client.aclose()


async def test_stream_delivers_each_frame_as_it_is_made(agent: tuple[FakeAgent, str]) -> None:
    fake, url = agent
    async with httpx.AsyncClient(timeout=5) as http:
        client = ours(url, http, stream=True)
        frames = client.send(packet("two", seq=1))
        first = json.loads(await anext(frames))
        assert first["seq"] == 2 and not fake.second_made  # arrived before the second was made
        fake.release.set()
        second = json.loads(await anext(frames))
        assert second["seq"] == 3 and fake.second_made
        assert [f async for f in frames] == []


async def test_sync_returns_every_frame_in_order(agent: tuple[FakeAgent, str]) -> None:
    fake, url = agent
    fake.release.set()
    async with httpx.AsyncClient(timeout=5) as http:
        got = await sent(ours(url, http), packet("two", seq=1))
    assert [g["seq"] for g in got] == [2, 3]


@pytest.mark.parametrize("stream", [False, True])
async def test_a_frame_error_is_acps_invalid_input(agent: tuple[FakeAgent, str], stream: bool) -> None:
    _, url = agent
    async with httpx.AsyncClient(timeout=5) as http:
        client = ours(url, http, stream)
        with pytest.raises(Undelivered, match="failed: invalid_input: acp: .*type"):
            await sent(client, b'{"type":"nonsense"}')
        with pytest.raises(Undelivered, match="invalid_input: acp: not a packet this agent takes"):
            await sent(client, packet("bad"))
        assert len(await sent(client, packet("echo"))) == 1  # still serving


async def test_the_sdks_plain_client_sync_async_and_stream(agent: tuple[FakeAgent, str]) -> None:
    _, url = agent
    part = MessagePart(content_type="application/json", content=packet("echo", seq=1).decode())
    # With the header too: a user who passes the Content-Type the client leaves out still works.
    async with Client(base_url=url + "/acp", headers=JSON, timeout=5) as sdk:
        run = await sdk.run_sync(Message(parts=[part]), agent="echo")
        assert run.status == RunStatus.COMPLETED and run.output[0].role == "agent/echo"
        assert json.loads(run.output[0].parts[0].content or "")["seq"] == 2

        started = await sdk.run_async(Message(parts=[part]), agent="echo")
        assert started.status == RunStatus.CREATED
        for _ in range(100):  # the run lifecycle: GET /runs/{id} until it ends
            done = await sdk.run_status(run_id=started.run_id)
            if done.status.is_terminal:
                break
            await asyncio.sleep(0.02)
        assert done.status == RunStatus.COMPLETED
        assert json.loads(done.output[0].parts[0].content or "")["seq"] == 2
        events = [e.type async for e in sdk.run_events(run_id=started.run_id)]
        assert events[0] == "run.created" and events[-1] == "run.completed"

        kinds = [e.type async for e in sdk.run_stream(Message(parts=[part]), agent="echo")]
    assert kinds == [
        "run.created",
        "run.in-progress",
        "message.created",
        "message.part",
        "message.completed",
        "run.completed",
    ]


async def test_the_sdks_client_as_shipped_gets_a_run(agent: tuple[FakeAgent, str]) -> None:
    """acp-sdk's ``Client`` with no extra headers, as its documentation shows it: it posts its
    JSON with no Content-Type, which the agent reads as JSON (FastAPI alone would answer 422)."""
    _, url = agent
    part = MessagePart(content_type="application/json", content=packet("echo").decode())
    async with Client(base_url=url + "/acp", timeout=5) as sdk:
        run = await sdk.run_sync(Message(parts=[part]), agent="echo")
        kinds = [e.type async for e in sdk.run_stream(Message(parts=[part]), agent="echo")]
    assert run.status == RunStatus.COMPLETED and json.loads(run.output[0].parts[0].content or "")["seq"] == 2
    assert kinds[-1] == "run.completed"


async def test_an_error_names_no_file_and_a_pages_post_still_needs_its_content_type(
    agent: tuple[FakeAgent, str],
) -> None:
    _, url = agent
    runs = url + "/acp/runs"
    async with httpx.AsyncClient(timeout=5) as http:
        for body, where in ((b"{not json", "JSON decode error"), (b'{"agent_name": "echo"}', "body.input")):
            refused = await http.post(runs, content=body)  # no Content-Type, as the SDK's client
            error = refused.json()
            assert refused.status_code == 422 and error["code"] == "invalid_input", error
            assert where in error["message"] and error["message"].startswith("acp: not a run request: ")
            assert not any(leak in error["message"] for leak in ('File "', ".py", "line ", "site-packages"))
        # A browser's cross-site POST carries an Origin: no JSON is assumed for it (FastAPI's guard).
        valid = {
            "agent_name": "echo",
            "input": [{"parts": [{"content_type": "application/json", "content": "{}"}]}],
        }
        page = await http.post(
            runs, content=json.dumps(valid).encode(), headers={"Origin": "http://evil.example"}
        )
        assert page.status_code == 422 and page.json()["code"] == "invalid_input"


async def test_bad_input_gets_acps_errors_and_the_server_keeps_serving(agent: tuple[FakeAgent, str]) -> None:
    _, url = agent
    runs = url + "/acp/runs"
    async with httpx.AsyncClient(timeout=5) as http:
        malformed = await http.post(runs, content=b"{not json", headers=JSON)
        assert malformed.status_code == 422 and malformed.json()["code"] == "invalid_input"
        no_input = await http.post(runs, json={"agent_name": "echo"})
        assert no_input.status_code == 422 and no_input.json()["code"] == "invalid_input"
        body = {"agent_name": "nobody", "input": [{"parts": [{"content": "x"}]}]}
        unknown = await http.post(runs, json=body)
        assert unknown.status_code == 404 and unknown.json() == {
            "code": "not_found",
            "message": "Agent nobody not found",
            "data": None,
        }
        missing = await http.get(f"{runs}/{uuid.uuid4()}")
        assert missing.status_code == 404 and missing.json()["code"] == "not_found"
        for parts in (
            [{"content": "plain text"}],
            [{"content_type": "application/json", "content": "{}"}] * 2,
        ):
            failed = await http.post(runs, json={"agent_name": "echo", "input": [{"parts": parts}]})
            assert failed.status_code == 200 and failed.json()["status"] == "failed"
            assert failed.json()["error"]["code"] == "invalid_input"
        assert len(await sent(ours(url, http), packet("echo"))) == 1


async def test_undelivered_when_the_client_gives_up(agent: tuple[FakeAgent, str]) -> None:
    _, url = agent
    async with httpx.AsyncClient(timeout=httpx.Timeout(5, read=0.3)) as http:
        with pytest.raises(Undelivered, match="ReadTimeout"):
            await sent(ours(url, http), packet("hang"))
        with pytest.raises(Undelivered, match="ReadTimeout"):
            await sent(ours(url, http, stream=True), packet("hang"))
        wrong = BINDING.client(Peer(url + "/elsewhere", "7", "r1", Path("keys")), http)
        with pytest.raises(Undelivered, match="HTTP 404 \\(text/plain\\)"):  # not ACP's error body
            await wrong.connect()
        closed = BINDING.client(Peer(f"http://127.0.0.1:{free_port()}/acp", "7", "r1", Path("keys")), http)
        with pytest.raises(Undelivered, match="ConnectError"):
            await sent(closed, packet("echo"))


async def test_the_hooks_are_scoped_and_removed(agent: tuple[FakeAgent, str]) -> None:
    _, url = agent
    async with httpx.AsyncClient(timeout=5) as http:
        seen: list[tuple[str, str | None]] = []

        async def record(request: httpx.Request) -> None:
            seen.append((request.url.path, request.headers.get("content-type")))

        client = ours(url, http)
        http.event_hooks["request"].append(record)
        await sent(client, packet("echo"))  # GET /agents, then POST /runs
        elsewhere = await http.post(url + "/elsewhere/runs", content=b"{}")  # another URL: untouched
        assert elsewhere.status_code == 404  # and not raised by the response hook
        assert seen == [("/acp/agents", None), ("/acp/runs", "application/json"), ("/elsewhere/runs", None)]
        await client.aclose()
        assert http.event_hooks == {"request": [record], "response": []}


@pytest.mark.parametrize("stream", [False, True])
async def test_frames_reuse_one_connection(agent: tuple[FakeAgent, str], stream: bool) -> None:
    _, url = agent
    proxy = Proxy(int(url.rsplit(":", 1)[1]))
    port = await proxy.start()
    async with httpx.AsyncClient(timeout=5) as http:
        client = ours(f"http://127.0.0.1:{port}", http, stream)
        await client.connect()
        first = proxy.take()
        sizes = []
        for seq in range(5):
            assert len(await sent(client, packet("echo", seq=seq))) == 1
            sizes.append(proxy.take())
    await proxy.close()
    assert proxy.connections == 1  # keep-alive: the listing and five runs on one connection
    print(
        f"\nacp {'stream' if stream else 'sync'}: connect {first[0]}/{first[1]} B, a frame {sizes[-1][0]}/{sizes[-1][1]} B up/down"
    )
