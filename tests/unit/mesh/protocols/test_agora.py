"""Agora on its own wire: the agora-protocol SDK's Flask receiver (under a2wsgi) on a real uvicorn
socket, the SDK's sender as the relay's client and as a user of the SDK would call it, the
protocol document fetched from the agent's URL, and the receiver's own error replies."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from agora import Sender
from agora.common.core import Suitability
from agora.common.storage import JSONStorage
from agora.common.toolformers.base import Tool
from agora.sender.components.transporter import SimpleSenderTransporter
from agora.utils import compute_hash, encode_as_data_uri
from starlette.applications import Starlette
from starlette.routing import Mount

from gaiamesh.deploy.local import free_port
from gaiamesh.mesh.frames import PacketType, make_packet, parse_packet_json
from gaiamesh.mesh.native import Peer, Undelivered, binding
from gaiamesh.mesh.protocols import canonical_json
from gaiamesh.mesh.protocols.agora import client as agora_client
from gaiamesh.mesh.protocols.agora import server as agora_server
from gaiamesh.mesh.protocols.agora.binding import AgoraBinding
from gaiamesh.mesh.protocols.agora.envelope import DOCUMENT, PROTOCOL_HASH

BINDING = binding("agora")
DOC_NAME = agora_server.DOCUMENT_NAME


# --- a fake agent, a counting proxy, a server ----------------------------------------------------
@dataclass
class FakeAgent:
    """Answers a doc_init with two frames (the packet, seq+1 and +2, from this node), a
    search_docs with none, an events packet after ``delay`` seconds; refuses a non-packet."""

    node_id: str = "1"
    tool: str = "echo"
    description: str = "Echoes a packet back, renumbered."
    consumes: frozenset[str] = frozenset({"doc_init", "search_docs", "events"})
    delay: float = 0.0
    seen: list[bytes] = field(default_factory=list)

    async def answer(self, blob: bytes, inner: str) -> AsyncIterator[bytes]:
        assert inner == "json"
        packet = parse_packet_json(blob).to_dict()  # FrameError for a blob that is not a packet
        self.seen.append(blob)
        if packet["type"] == "events":
            await asyncio.sleep(self.delay)
        if packet["type"] == "search_docs":
            return
        for step in (1, 2):
            yield canonical_json({**packet, "seq": packet["seq"] + step, "src": self.node_id})


@dataclass
class Tap:
    """A TCP proxy counting connections and bytes each way (what the relay's tap will count)."""

    target: int
    port: int = 0
    connections: int = 0
    up: int = 0
    down: int = 0

    def reset(self) -> None:
        self.connections = self.up = self.down = 0

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, way: str) -> None:
        try:
            while data := await reader.read(65536):
                setattr(self, way, getattr(self, way) + len(data))
                writer.write(data)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        await asyncio.gather(self._pipe(reader, up_writer, "up"), self._pipe(up_reader, writer, "down"))

    async def start(self) -> asyncio.Server:
        server = await asyncio.start_server(self._client, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        return server


@dataclass
class Running:
    agent: FakeAgent
    port: int
    tap: Tap

    @property
    def base(self) -> str:  # as the relay reaches the agent: through the tap, ending in the mount
        return f"http://127.0.0.1:{self.tap.port}{BINDING.mount}"

    def peer(self, base: str | None = None) -> Peer:
        return Peer(base or self.base, self.agent.node_id, "run-1", Path("."))


@pytest.fixture
async def running() -> AsyncIterator[Running]:
    agent = FakeAgent()
    app = Starlette(routes=[Mount(BINDING.mount, BINDING.app(agent, Path(".")))])
    port = free_port()
    listening = socket.create_server(("127.0.0.1", port))  # connections queue until uvicorn accepts
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    serving = asyncio.create_task(server.serve(sockets=[listening]))
    tap = Tap(port)
    tap_server = await tap.start()
    yield Running(agent, port, tap)
    tap_server.close()
    server.should_exit = True
    await serving


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=httpx.Timeout(5.0)) as client:
        yield client


def packet(ptype: PacketType = PacketType.DOC_INIT, seq: int = 1) -> bytes:
    payloads: dict[PacketType, dict[str, Any]] = {
        PacketType.DOC_INIT: {"chunks": ["Solar farm output rose 12 % — after the upgrade."]},
        PacketType.SEARCH_DOCS: {"passages": [], "n_chunks": 0},
        PacketType.EVENTS: {"facts": []},
    }
    made = make_packet(ptype, payloads[ptype], run_id="run-1", src="network", seq=seq, question="What rose?")
    return canonical_json(made.to_dict())


async def collect(frames: AsyncIterator[bytes]) -> list[bytes]:
    return [frame async for frame in frames]


def message(
    body: str, protocol_hash: str = PROTOCOL_HASH, sources: list[str] | None = None
) -> dict[str, Any]:
    return {"protocolHash": protocol_hash, "protocolSources": sources or [], "body": body}


# --- the binding --------------------------------------------------------------------------------
def test_the_registry_makes_the_agora_binding() -> None:
    assert isinstance(BINDING, AgoraBinding)
    assert (BINDING.name, BINDING.inner, BINDING.mount, BINDING.streams) == ("agora", "json", "/agora", False)


async def test_a_frame_round_trip_returns_the_agents_frames_in_order(
    running: Running, http: httpx.AsyncClient
) -> None:
    client = BINDING.client(running.peer(), http)
    await client.connect()
    sent = packet(seq=7)
    got = await collect(client.send(sent))
    assert running.agent.seen == [sent]  # the blob as it rode in the body, byte for byte
    assert [json.loads(f)["seq"] for f in got] == [8, 9]
    assert all(f == canonical_json(json.loads(f)) and json.loads(f)["src"] == "1" for f in got)
    assert json.loads(got[0])["payload"] == json.loads(sent)["payload"]  # non-ASCII intact
    assert await collect(client.send(packet(PacketType.SEARCH_DOCS))) == []  # a packet it only reads
    await client.aclose()


async def test_the_agent_publishes_the_document_and_lists_it_at_the_callers_url(
    running: Running, http: httpx.AsyncClient
) -> None:
    listing = (await http.get(f"{running.base}/protocols")).json()
    assert listing["tool"] == "echo" and listing["description"] == running.agent.description
    assert listing["consumes"] == ["doc_init", "events", "search_docs"]
    (entry,) = listing["protocols"]
    assert entry == {
        "name": DOC_NAME,
        "hash": PROTOCOL_HASH,
        "url": f"{running.base}/protocols/{DOC_NAME}",  # the tap's port, as the caller used
        "multiround": False,
    }
    document = await http.get(entry["url"])
    assert document.headers["content-type"] == "text/plain; charset=utf-8"
    assert compute_hash(document.text) == PROTOCOL_HASH
    assert (await http.get(f"{running.base}/protocols/other")).status_code == 404


async def test_messages_carry_the_hash_and_the_url_not_the_document(http: httpx.AsyncClient) -> None:
    seen: list[dict[str, Any]] = []  # what a bare socket in the agent's place receives

    async def spy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await reader.read(65536)
        head, _, body = request.partition(b"\r\n\r\n")
        length = int(
            next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")).split(b":")[1]
        )
        while len(body) < length:
            body += await reader.read(65536)
        seen.append(json.loads(body))
        reply = b'{"status":"success","body":"[]"}'
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(reply)
        )
        writer.write(reply)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(spy, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = BINDING.client(Peer(f"http://127.0.0.1:{port}/agora", "1", "run-1", Path(".")), http)
    assert await collect(client.send(packet())) == []
    server.close()
    (sent,) = seen
    assert sent == {
        "protocolHash": PROTOCOL_HASH,
        "protocolSources": [f"http://127.0.0.1:{port}/agora/protocols/{DOC_NAME}"],
        "body": packet().decode(),
    }
    await client.aclose()


async def test_the_receiver_downloads_the_document_once_and_every_message_opens_a_connection(
    running: Running, http: httpx.AsyncClient, capsys: pytest.CaptureFixture[str]
) -> None:
    tap = running.tap
    client = BINDING.client(running.peer(), http)
    await client.connect()  # the relay fetches and checks the document it will cite
    first_request = (tap.connections, tap.up, tap.down)
    assert tap.connections == 1
    tap.reset()
    await collect(client.send(packet()))  # the POST, and the receiver's own download of the document
    first_frame = (tap.connections, tap.up, tap.down)
    assert tap.connections == 2
    tap.reset()
    n = 5
    for seq in range(n):
        assert len(await collect(client.send(packet(seq=seq)))) == 2
    assert tap.connections == n  # requests.post: a new session, so a new connection, per message
    with capsys.disabled():
        print(
            f"\nagora native: connect {first_request}, first frame {first_frame} (connections, up, down); "
            f"then per frame {tap.up // n} B up, {tap.down // n} B down, {tap.connections / n:.0f} connection"
        )
    await client.aclose()


# --- the SDK's own sender, as a user of it would call our agent ---------------------------------
SENDER_ROUTINE = "def run(task_data):\n    return send_to_server(task_data['packet'])\n"


def sdk_sender(tmp_path: Path, sources: list[str]) -> Sender:
    """The SDK's sender as its documentation builds it, no model: the protocol and a routine
    registered in its own JSON storage, and its own transporter."""
    sender = Sender.make_default(None, storage=JSONStorage(str(tmp_path / "sender.json")))
    sender.memory.register_new_protocol(PROTOCOL_HASH, DOCUMENT, sources, None)
    sender.memory.set_default_suitability(PROTOCOL_HASH, "packet", Suitability.ADEQUATE)
    sender.memory.register_implementation(PROTOCOL_HASH, SENDER_ROUTINE)
    return sender


@pytest.mark.parametrize("by_url", [True, False])
async def test_the_sdks_own_sender_gets_the_answer(running: Running, tmp_path: Path, by_url: bool) -> None:
    # With no source the SDK's sender puts the whole document inline as a data: URI.
    sources = [f"{running.base}/protocols/{DOC_NAME}"] if by_url else []
    sender = sdk_sender(tmp_path, sources)
    running.tap.reset()
    body = await asyncio.to_thread(
        sender.execute_task, "packet", None, {"packet": packet().decode()}, running.base + "/"
    )
    frames = json.loads(body)
    assert [f["seq"] for f in frames] == [2, 3]
    # by URL, the receiver fetched the document through the tap (a second connection); inline, not
    assert running.tap.connections == (2 if by_url else 1)


async def test_the_sdks_transporter_alone_speaks_the_same_message(running: Running) -> None:
    conversation = SimpleSenderTransporter().new_conversation(
        running.base + "/", False, PROTOCOL_HASH, [encode_as_data_uri(DOCUMENT)]
    )
    reply = await asyncio.to_thread(conversation, packet(PacketType.SEARCH_DOCS).decode())
    assert reply == {"status": "success", "body": "[]"}


async def test_the_sdks_sender_reads_a_refusal_and_its_reason(running: Running) -> None:
    """Natural language (no protocol) to an agent with no model, and a wrong hash, sent by the
    SDK's transporter as the SDK's sender sends them: the reply has a body, the reason in it."""
    for protocol_hash, reason in (
        (None, "this agent has no model"),
        ("bad-hash", "Failed to download protocol"),
    ):
        conversation = SimpleSenderTransporter().new_conversation(
            running.base + "/", False, protocol_hash, []
        )
        reply = await asyncio.to_thread(conversation, "What rose at the solar farm?")
        assert reply["status"] == "error" and reason in reply["body"], reply
    # Multi-round, the SDK's choice for a message with no protocol: its error names the reply.
    conversation = SimpleSenderTransporter().new_conversation(running.base + "/", True, None, [])
    with pytest.raises(Exception, match="this agent has no model"):
        await asyncio.to_thread(conversation, "What rose at the solar farm?")
    assert running.agent.seen == []


# --- bad input: the receiver's own error reply, and it keeps serving -----------------------------
OTHER = "---\nname: other\nmultiround: false\n---\nSomething else entirely.\n"
BAD: dict[str, tuple[Any, str]] = {
    "wrong hash, our URL": ("url", "Failed to download protocol"),
    "wrong hash, our document inline": (
        message(packet().decode(), "AAAAAAAAAAAAAAAAAAAAAAAAAAA=", [encode_as_data_uri(DOCUMENT)]),
        "Failed to download protocol",
    ),
    "unknown protocol": (
        message(packet().decode(), compute_hash(OTHER), [encode_as_data_uri(OTHER)]),
        "is not suitable for execution",
    ),
    "negotiation": (message("hello", "negotiation"), "this agent has no model"),
    "no protocol": ({"protocolHash": None, "protocolSources": [], "body": "hi"}, "this agent has no model"),
    "not a packet": (
        message('{"type":"nonsense"}', sources=[encode_as_data_uri(DOCUMENT)]),
        "unknown packet type",
    ),
    "body not a string": (
        {**message("", sources=[encode_as_data_uri(DOCUMENT)]), "body": {"type": "doc_init"}},
        "body must be a string",
    ),
    "no members": ({}, "protocolHash"),
    "not JSON": (b"{not json", "Bad Request"),
}


@pytest.mark.parametrize("case", list(BAD))
async def test_bad_messages_get_the_receivers_error_reply(
    running: Running, http: httpx.AsyncClient, case: str
) -> None:
    body, words = BAD[case]
    if body == "url":
        body = message(
            packet().decode(), "AAAAAAAAAAAAAAAAAAAAAAAAAAA=", [f"{running.base}/protocols/{DOC_NAME}"]
        )
    url = running.base + "/"
    if isinstance(body, bytes):
        reply = await http.post(url, content=body, headers={"content-type": "application/json"})
    else:
        reply = await http.post(url, json=body)
    assert reply.status_code == 200  # Agora's receiver answers every failure with 200 and status: error
    assert reply.json()["status"] == "error" and words in reply.json()["message"]
    assert reply.json()["body"] == "error: " + reply.json()["message"]  # what the SDK's sender reads
    assert running.agent.seen == []
    good = await http.post(url, json=message(packet().decode(), sources=[encode_as_data_uri(DOCUMENT)]))
    assert good.json()["status"] == "success" and len(json.loads(good.json()["body"])) == 2


async def test_our_client_reports_the_error_reply_as_undelivered(
    running: Running, http: httpx.AsyncClient
) -> None:
    client = BINDING.client(running.peer(), http)
    with pytest.raises(Undelivered, match="unknown packet type 'nonsense'"):
        await collect(client.send(b'{"type":"nonsense"}'))
    with pytest.raises(Undelivered, match="UnicodeDecodeError"):  # a body is text: never sent
        await collect(client.send(b"\xff"))
    assert len(await collect(client.send(packet()))) == 2
    await client.aclose()


async def test_a_document_the_agent_does_not_serve_fails_connect(
    running: Running, http: httpx.AsyncClient
) -> None:
    client = BINDING.client(running.peer(f"http://127.0.0.1:{running.tap.port}/elsewhere"), http)
    with pytest.raises(Undelivered, match="does not serve the protocol"):
        await client.connect()
    await client.aclose()


async def test_a_silent_agent_times_out_and_a_closed_port_is_refused(running: Running) -> None:
    running.agent.delay = 1.0
    async with httpx.AsyncClient(timeout=httpx.Timeout(0.3)) as short:
        client = BINDING.client(running.peer(), short)
        with pytest.raises(Undelivered, match="Timeout"):
            await collect(client.send(packet(PacketType.EVENTS)))
        await client.aclose()
        gone = BINDING.client(running.peer(f"http://127.0.0.1:{free_port()}/agora"), short)
        with pytest.raises(Undelivered, match="ConnectionError"):
            await collect(gone.send(packet()))
        await gone.aclose()


async def test_first_messages_at_once_all_get_their_answer(running: Running, http: httpx.AsyncClient) -> None:
    # The receiver knows no protocol yet: every one of them looks it up (one downloads it).
    client = BINDING.client(running.peer(), http)
    answers = await asyncio.gather(*(collect(client.send(packet(seq=s))) for s in range(8)))
    assert sorted(json.loads(a[0])["seq"] for a in answers) == list(range(1, 9))
    await client.aclose()


def test_the_receivers_routine_runs_in_the_sdks_executor_and_prints_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    tool = Tool("handle_packet", "", {}, {}, lambda packet: f"handled {packet}")
    conversation = agora_server.QuietExecutor().new_conversation(
        "p+/=", agora_server.RECEIVER_ROUTINE, False, [tool]
    )
    assert conversation("x") == "handled x"
    assert capsys.readouterr().out == ""  # the SDK's conversation prints every reply by default


def test_reply_bodies_that_are_not_packet_arrays_are_undelivered() -> None:
    assert agora_client.frames_of('[{"b":1,"a":2}]') == [b'{"a":2,"b":1}']
    for body in ("nope", '{"a":1}', "[1]", None, ["not text"]):
        with pytest.raises(Undelivered, match="not a JSON array of packets"):
            agora_client.frames_of(body)
