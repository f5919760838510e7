"""``a2a`` on its own wire: the a2a-sdk's server on a real uvicorn socket, called by our client
(the SDK's client underneath) and by the SDK's own client as a user of it would call an agent."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from a2a import types as a2a_types
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.helpers import get_data_parts, new_data_part
from starlette.applications import Starlette
from starlette.routing import Mount

from gaiamesh.deploy.local import free_port, wait_until_answers
from gaiamesh.mesh.frames import PacketType, make_packet, parse_packet_json
from gaiamesh.mesh.native import Peer, Undelivered
from gaiamesh.mesh.native import binding as native_binding
from gaiamesh.mesh.protocols import canonical_json
from gaiamesh.mesh.protocols.a2a.binding import A2ABinding
from gaiamesh.mesh.protocols.a2a.server import CONSUMES_EXTENSION

RUN = "run-a2a"
CARD = "/.well-known/agent-card.json"
WAIT = 10.0  # seconds a test waits for a frame before it fails (never reached when all is well)


@dataclass
class FakeAgent:
    """An agent that answers a search_docs packet by question: "echo" -> the packet back from
    itself with one more chunk; "two <gate>" -> two frames, the second only once the test opens
    the gate; "none" -> nothing. A blob that is no packet raises FrameError (parse_packet_json)."""

    node_id: str = "fake"
    tool: str = "fake_search"
    description: str = "Searches the document (a test's fake)."
    consumes: frozenset[str] = frozenset({"search_docs", "doc_init"})
    reads: frozenset[str] = frozenset()
    emits: frozenset[str] = frozenset({"search_docs"})
    answers_text: bool = False  # a text request gets the protocol's error (tests/unit/agents/test_described.py)
    gates: dict[str, threading.Event] = field(default_factory=dict)
    seen: list[bytes] = field(default_factory=list)

    def gate(self, name: str) -> threading.Event:
        return self.gates.setdefault(name, threading.Event())

    async def answer(self, blob: bytes, inner: str) -> AsyncIterator[bytes]:
        assert inner == "json"
        packet = parse_packet_json(blob).to_dict()
        self.seen.append(blob)
        word, _, gate = packet["question"].partition(" ")
        if word == "none":
            return
        reply = {**packet, "src": self.node_id, "seq": packet["seq"] + 1}
        reply["payload"] = {**packet["payload"], "n_chunks": packet["payload"]["n_chunks"] + 1}
        yield canonical_json(reply)
        if word == "two":
            # The second frame is made only after the test saw the first: streaming shows it.
            opened = await asyncio.to_thread(self.gate(gate).wait, WAIT)
            yield canonical_json({**reply, "seq": reply["seq"] + 1, "tag": "second" if opened else "timeout"})


def packet(question: str = "echo", seq: int = 4) -> dict[str, Any]:
    passages = [{"chunk": 2, "score": 0.75, "text": "Paris is the capital of France."}]
    return make_packet(
        PacketType.SEARCH_DOCS,
        {"passages": passages, "n_chunks": 3},
        run_id=RUN,
        src="network",
        seq=seq,
        question=question,
    ).to_dict()


def expected(sent: dict[str, Any], extra_seq: int = 1, **changes: Any) -> bytes:
    payload = {**sent["payload"], "n_chunks": sent["payload"]["n_chunks"] + 1}
    return canonical_json(
        {**sent, "src": "fake", "seq": sent["seq"] + extra_seq, "payload": payload, **changes}
    )


@dataclass
class Server:
    url: str  # the agent's native root, e.g. http://127.0.0.1:<port>
    agent: FakeAgent

    @property
    def base_url(self) -> str:
        return f"{self.url}{A2ABinding.mount}"


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    agent = FakeAgent()
    binding = native_binding("a2a")
    app = Starlette(routes=[Mount(binding.mount, app=binding.app(agent, Path("keys")))])
    port = free_port()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", timeout_graceful_shutdown=2
    )
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    wait_until_answers(f"{url}{binding.mount}{CARD}", lambda: None, 20, "a2a test agent")
    yield Server(url, agent)
    for gate in agent.gates.values():
        gate.set()
    srv.should_exit = True
    thread.join(timeout=10)


class CountingProxy:
    """A TCP proxy on 127.0.0.1 that counts the connections and bytes through it."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.connections = 0
        self.up = 0
        self.down = 0
        self._server: asyncio.Server | None = None
        self._writers: list[asyncio.StreamWriter] = []
        self._handlers: list[asyncio.Task[None]] = []

    async def __aenter__(self) -> CountingProxy:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for writer in self._writers:
            writer.close()
        await asyncio.gather(*self._handlers, return_exceptions=True)  # each ends as its sockets close
        await self._server.wait_closed()

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    def counts(self) -> tuple[int, int]:
        return self.up, self.down

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        handler = asyncio.current_task()
        assert handler is not None
        self._handlers.append(handler)
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        self._writers += [writer, up_writer]
        await asyncio.gather(self._pump(reader, up_writer, True), self._pump(up_reader, writer, False))

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, up: bool) -> None:
        try:
            while data := await reader.read(65536):
                if up:
                    self.up += len(data)
                else:
                    self.down += len(data)
                writer.write(data)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()


def peer(base_url: str) -> Peer:
    return Peer(base_url=base_url, node_id="fake", run_id=RUN, keys_dir=Path("keys"))


async def collect(frames: AsyncIterator[bytes]) -> list[bytes]:
    return [frame async for frame in frames]


def test_the_registry_names_the_a2a_binding() -> None:
    binding = native_binding("a2a")
    assert isinstance(binding, A2ABinding)
    assert (binding.name, binding.inner, binding.mount, binding.streams) == ("a2a", "json", "/a2a", True)


async def test_the_card_describes_the_tool_at_the_url_the_caller_used(server: Server) -> None:
    async with httpx.AsyncClient(timeout=WAIT) as http:
        card = await A2ACardResolver(http, server.base_url).get_agent_card()
        assert card.name == "Gaia Mesh fake_search agent (node fake)"
        assert card.description.startswith(server.agent.description.rstrip("."))
        [skill] = card.skills
        assert skill.id == "fake_search" and "a packet of type doc_init or search_docs" in skill.description
        assert list(card.default_input_modes) == list(skill.input_modes) == ["application/json"]  # no text
        [extension] = card.capabilities.extensions
        assert extension.uri == CONSUMES_EXTENSION
        assert list(extension.params["consumes"]) == ["doc_init", "search_docs"]
        assert list(extension.params["emits"]) == ["search_docs"]
        assert card.capabilities.streaming
        [interface] = card.supported_interfaces
        assert (interface.url, interface.protocol_binding) == (f"{server.base_url}/", "JSONRPC")
        # Through a proxy on another port (as the relay's tap), the card names the proxy's port.
        port = int(server.url.rsplit(":", 1)[1])
        async with CountingProxy(port) as proxy:
            via = f"http://127.0.0.1:{proxy.port}{A2ABinding.mount}"
            card = await A2ACardResolver(http, via).get_agent_card()
            assert card.supported_interfaces[0].url == f"{via}/"


@pytest.mark.parametrize("stream", [False, True])
async def test_a_frame_goes_and_the_answer_comes_back(server: Server, stream: bool) -> None:
    sent = packet()
    async with httpx.AsyncClient(timeout=WAIT) as http:
        client = native_binding("a2a").client(peer(server.base_url), http, stream=stream)
        await client.connect()
        try:
            assert await collect(client.send(canonical_json(sent))) == [expected(sent)]
            # A whole float (score 2.0) rides as a protobuf double and comes back as 2: the same
            # packet once parsed; ints stay ints (seq, chunk).
            whole = {
                **sent,
                "payload": {**sent["payload"], "passages": [{"chunk": 1, "score": 2.0, "text": "x"}]},
            }
            [frame] = await collect(client.send(canonical_json(whole)))
            assert parse_packet_json(frame) == parse_packet_json(expected(whole))
            assert b'"score":2,' in frame and b'"seq":5,' in frame
        finally:
            await client.aclose()
        assert not http.is_closed  # the run's httpx client is the relay's, not the binding's


async def test_the_agent_received_the_packet_as_sent(server: Server) -> None:
    sent = packet("echo", seq=11)
    async with httpx.AsyncClient(timeout=WAIT) as http:
        client = A2ABinding().client(peer(server.base_url), http)
        await collect(client.send(canonical_json(sent)))
        await client.aclose()
    assert canonical_json(sent) in server.agent.seen


async def test_streaming_delivers_the_first_frame_before_the_second_is_made(server: Server) -> None:
    sent = packet("two streamed")
    async with httpx.AsyncClient(timeout=WAIT) as http:
        client = A2ABinding().client(peer(server.base_url), http, stream=True)
        frames = client.send(canonical_json(sent))
        first = await asyncio.wait_for(anext(frames), WAIT)
        assert first == expected(sent)
        assert not server.agent.gate("streamed").is_set()  # the agent is still waiting to make #2
        server.agent.gate("streamed").set()
        rest = await asyncio.wait_for(collect(frames), WAIT)
        assert rest == [expected(sent, extra_seq=2, tag="second")]
        await client.aclose()


async def test_without_streaming_every_frame_comes_in_order_in_one_answer(server: Server) -> None:
    sent = packet("two at-once")
    server.agent.gate("at-once").set()
    async with httpx.AsyncClient(timeout=WAIT) as http:
        client = A2ABinding().client(peer(server.base_url), http, stream=False)
        frames = await asyncio.wait_for(collect(client.send(canonical_json(sent))), WAIT)
        assert frames == [expected(sent), expected(sent, extra_seq=2, tag="second")]
        await client.aclose()


@pytest.mark.parametrize("stream", [False, True])
async def test_an_answer_with_no_frame_is_empty(server: Server, stream: bool) -> None:
    async with httpx.AsyncClient(timeout=WAIT) as http:
        client = A2ABinding().client(peer(server.base_url), http, stream=stream)
        assert await collect(client.send(canonical_json(packet("none")))) == []
        await client.aclose()


@pytest.mark.parametrize("streaming", [False, True])
async def test_the_sdks_own_client_calls_the_agent(server: Server, streaming: bool) -> None:
    # As an a2a-sdk user would: a client from the agent's URL, a message with a data part.
    # SendMessage gets the frames in one Message (the SDK's own idiom); SendStreamingMessage a
    # Task whose artifacts come one by one.
    sent = packet()
    async with httpx.AsyncClient(timeout=WAIT) as http:
        client = await create_client(server.base_url, ClientConfig(streaming=streaming, httpx_client=http))
        message = a2a_types.Message(
            message_id="m-1", role=a2a_types.Role.ROLE_USER, parts=[new_data_part(sent)], context_id=RUN
        )
        task, parts = None, []
        async for response in client.send_message(a2a_types.SendMessageRequest(message=message)):
            if response.HasField("message"):
                assert response.message.role == a2a_types.Role.ROLE_AGENT
                assert response.message.context_id == RUN
                parts += response.message.parts
            elif response.HasField("task"):
                task = response.task
            elif response.HasField("artifact_update"):
                assert task is not None
                task.artifacts.append(response.artifact_update.artifact)
            elif response.HasField("status_update"):
                assert task is not None
                task.status.CopyFrom(response.status_update.status)
        await client.close()
    if streaming:
        assert task is not None and task.status.state == a2a_types.TaskState.TASK_STATE_COMPLETED
        parts = [part for artifact in task.artifacts for part in artifact.parts]
    else:
        assert task is None  # a Message-only answer: no Task is made or kept
    [answer] = get_data_parts(parts)
    assert (answer["src"], answer["payload"]["n_chunks"]) == ("fake", 4)  # 4.0: the SDK's doubles


async def _post(http: httpx.AsyncClient, url: str, **kwargs: Any) -> dict[str, Any]:
    response = await http.post(url, headers={"A2A-Version": "1.0"}, **kwargs)
    assert response.status_code == 200  # JSON-RPC errors ride in a 200 response
    body: dict[str, Any] = response.json()
    return body


def _send(parts: list[dict[str, Any]], method: str = "SendMessage") -> dict[str, Any]:
    message = {"messageId": "m-bad", "role": "ROLE_USER", "parts": parts}
    return {"jsonrpc": "2.0", "id": 7, "method": method, "params": {"message": message}}


@pytest.mark.parametrize(
    ("body", "code", "says"),
    [
        (b"{not json", -32700, "Expecting property name"),
        (b'{"jsonrpc":"2.0","id":7,"method":"message/send","params":{}}', -32601, "Method not found"),
        (_send([{"text": "hello"}]), -32602, "a2a: the fake_search tool takes packets, not text: send one packet"),
        (_send([{"data": [1, 2]}]), -32602, "holds a list, not a packet object"),
        (_send([{"data": {"type": "x"}}, {"data": {"type": "x"}}]), -32602, "found 2 parts"),
        (_send([{"data": {"hello": 1}}]), -32602, "the packet was refused"),
        (_send([{"data": {"hello": 1}}], "SendStreamingMessage"), -32602, "the packet was refused"),
    ],
)
async def test_bad_input_gets_a_json_rpc_error_and_the_agent_keeps_serving(
    server: Server, body: bytes | dict[str, Any], code: int, says: str
) -> None:
    async with httpx.AsyncClient(timeout=WAIT) as http:
        sent = {"content": body} if isinstance(body, bytes) else {"json": body}
        answer = await _post(http, f"{server.base_url}/", **sent)
        assert answer["error"]["code"] == code and says in answer["error"]["message"]
        client = A2ABinding().client(peer(server.base_url), http)
        assert await collect(client.send(canonical_json(packet()))) == [expected(packet())]
        await client.aclose()


@pytest.mark.parametrize("stream", [False, True])
async def test_a_refused_packet_is_undelivered_with_the_agents_reason(server: Server, stream: bool) -> None:
    async with httpx.AsyncClient(timeout=WAIT) as http:
        client = A2ABinding().client(peer(server.base_url), http, stream=stream)
        with pytest.raises(Undelivered, match="the packet was refused"):
            await collect(client.send(b'{"hello":1}'))
        await client.aclose()


async def test_an_unknown_agent_or_a_closed_port_is_undelivered(server: Server) -> None:
    async with httpx.AsyncClient(timeout=WAIT) as http:
        with pytest.raises(Undelivered, match="no agent card"):
            await A2ABinding().client(peer(f"{server.url}/nobody"), http).connect()
        with pytest.raises(Undelivered, match="no agent card"):
            await A2ABinding().client(peer(f"http://127.0.0.1:{free_port()}/a2a"), http).connect()


@pytest.mark.parametrize("stream", [False, True])
async def test_frames_after_the_card_reuse_one_connection(server: Server, stream: bool) -> None:
    # The trial saw the SSE method open a new TCP connection per call: that is a
    # message-only answer (the SDK's client stops reading at the Message, so httpx cannot return
    # the connection to its pool). A Task's stream is read to its end, and the connection stays.
    port = int(server.url.rsplit(":", 1)[1])
    async with CountingProxy(port) as proxy, httpx.AsyncClient(timeout=WAIT) as http:
        client = A2ABinding().client(
            peer(f"http://127.0.0.1:{proxy.port}{A2ABinding.mount}"), http, stream=stream
        )
        await client.connect()
        for seq in range(5):
            sent = packet(seq=seq)
            assert await collect(client.send(canonical_json(sent))) == [expected(sent)]
        await client.aclose()
        assert proxy.connections == 1
