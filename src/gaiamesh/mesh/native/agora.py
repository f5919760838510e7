"""``agora`` on its own wire: the ``agora-protocol`` SDK's receiver (the agent) and sender (the
relay) over HTTP, with our fixed protocol document published at a URL of the agent.

One frame is one Agora message: the sender POSTs ``{protocolHash, protocolSources, body}`` to the
receiver's ``/`` (``body``: the packet's canonical JSON as text), and the receiver replies
``{"status": "success", "body": ...}`` where ``body`` is a JSON array (as text) of the packets
the agent emitted while handling it, or ``{"status": "error", "message": ...}``, the SDK's own
error reply (a wrong hash, an unknown protocol, a malformed message, a body that is not a packet).

``protocolSources`` carries the URL of the document, ``<mount>/protocols/<name>``, not the
document inline (the relay mode's ``data:`` source, ~1.3 kB a frame). The agent serves it; its
receiver starts knowing no protocol, so the first message makes it download the document from
that URL and check its hash with the SDK's own ``download_and_verify_protocol`` (as
``Receiver.create_conversation`` does for any unknown hash); the relay's :meth:`connect` does the
same once before its first frame. No model anywhere (``toolformer=None``): the receiver's
components that would ask one are replaced, through ``Receiver``'s own parameters, by fixed ones
(a checker that accepts exactly our document, a "programmer" that hands back the routine below,
a responder and negotiator that refuse), and the routine runs in an SDK executor as an
LLM-written one would.

The receiver is Flask (WSGI), mounted with ``a2wsgi``; the documents are served by Starlette on
the event loop, not by Flask, so that a receiver thread downloading a document never waits for
another receiver thread (all ``RECEIVER_THREADS`` busy would deadlock). The relay posts with the
SDK's sender transport (``requests``, synchronous), in a thread of the client's own pool; it
cannot use the relay's ``httpx.AsyncClient`` (see :class:`AgoraClient`). Nothing streams: the
reply comes when the agent has finished with the frame.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

import httpx
import requests
from a2wsgi import WSGIMiddleware
from agora.common.errors import ProtocolError as AgoraError
from agora.common.errors import ProtocolRejectedError, ProtocolTransportError
from agora.common.executor import ExecutorConversation, UnsafeExecutor
from agora.common.storage import Storage
from agora.common.toolformers.base import Tool
from agora.receiver import Receiver, ReceiverMemory, ReceiverServer
from agora.receiver.components.negotiator import ReceiverNegotiator
from agora.receiver.components.programmer import ReceiverProgrammer
from agora.receiver.components.protocol_checker import ReceiverProtocolChecker
from agora.receiver.components.responder import Responder
from agora.sender.components.transporter import SimpleSenderTransporter
from agora.utils import compute_hash, download_and_verify_protocol, extract_metadata
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ..protocols.agora import DOCUMENT, PROTOCOL_HASH
from ..protocols.base import canonical_json
from .base import AgentEndpoint, Binding, NativeClient, Peer, Undelivered

DOCUMENT_NAME: str = extract_metadata(DOCUMENT)["name"]  # "gaiamesh-packet-v1", from its front matter
RECEIVER_THREADS = 16  # a2wsgi's pool: frames one agent handles at once (each holds a thread)
SENDER_THREADS = 16  # one client's pool: frames in flight to one agent (requests blocks a thread)

# The routine the SDK would have a model write once a protocol is in use: hand the message's body
# to the agent (its one tool) and reply with what it returns.
RECEIVER_ROUTINE = "def run(message):\n    return handle_packet(message)\n"


def document_path(name: str = DOCUMENT_NAME) -> str:
    """Where, under the mount, the agent publishes a protocol document."""
    return f"/protocols/{name}"


class MemoryStorage(Storage):
    """The SDK's ``Storage`` in memory: its only one (``JSONStorage``) rewrites a JSON file on
    every change, i.e. on every message, from every thread at once."""

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}

    def save_memory(self) -> None:
        pass

    def load_memory(self) -> None:
        pass

    def __getitem__(self, key: str) -> Any:
        return self.data.get(key)  # as JSONStorage: a missing key reads as None

    def __setitem__(self, key: str, value: Any) -> None:
        self.data[key] = value

    def __delitem__(self, key: str) -> None:
        del self.data[key]

    def __iter__(self) -> Any:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def __contains__(self, key: object) -> bool:  # Mapping's would read None as present
        return key in self.data


# --- the agent: the SDK's receiver ----------------------------------------------------------------
class OurDocumentOnly(ReceiverProtocolChecker):
    """The receiver's suitability check without a model: our document is adequate, no other."""

    def __init__(self) -> None:
        super().__init__(None)

    def __call__(self, protocol_document: str, tools: list[Any], additional_info: str = "") -> bool:
        return compute_hash(protocol_document) == PROTOCOL_HASH


class FixedProgrammer(ReceiverProgrammer):
    """Hands back :data:`RECEIVER_ROUTINE` where the SDK's programmer would ask a model for one."""

    def __init__(self) -> None:
        super().__init__(None)

    def __call__(
        self, tools: list[Any], protocol_document: str, multiround: bool, additional_info: str = ""
    ) -> str:
        if compute_hash(protocol_document) != PROTOCOL_HASH:  # the checker refused it before
            raise ProtocolRejectedError("no routine for this protocol")
        return RECEIVER_ROUTINE


class NoModel(Responder, ReceiverNegotiator):
    """The responder (a message with no protocol) and the negotiator (``protocolHash:
    "negotiation"``) both need a model; without this they fail on ``None.new_conversation``."""

    def __init__(self) -> None:
        Responder.__init__(self, None)

    def create_conversation(self, *args: Any, **kwargs: Any) -> Any:
        raise ProtocolRejectedError(
            f"this agent has no model: it speaks only the protocol {PROTOCOL_HASH} ({DOCUMENT_NAME})"
        )


class QuietExecutor(UnsafeExecutor):
    """The SDK's plain executor (``exec`` of the routine), minus the ``print`` of every reply to
    stdout that its conversation does by default (the Flask server calls it without
    ``print_output``). Not its ``RestrictedExecutor``: that one ``ast.parse``s the routine on every
    message, and ``ast.parse`` in several threads at once raises a spurious ``SystemError`` ("AST
    constructor recursion depth mismatch") before CPython 3.11.8 (gh-106905; Debian bookworm's
    python3 is 3.11.2). The code it runs is only ever :data:`RECEIVER_ROUTINE`: our programmer
    writes it and our checker admits no other protocol; nothing from the wire is executed."""

    def new_conversation(self, protocol_id: str, code: str, multiround: bool, tools: list[Any]) -> Any:
        return _QuietConversation(self, protocol_id, code, multiround, tools)


class _QuietConversation(ExecutorConversation):
    def __call__(self, message: str, print_output: bool = False) -> Any:
        return super().__call__(message, print_output=False)


class LockedReceiver(Receiver):
    """The SDK's receiver, one protocol look-up at a time: two first messages at once both
    download the document and the second's ``register_new_protocol`` raises ``StorageError``
    ("already in memory"). The lock covers the look-up (and the one download), not the routine."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lock = threading.Lock()

    def create_conversation(self, protocol_hash: str, protocol_sources: list[str]) -> Any:
        with self._lock:
            return super().create_conversation(protocol_hash, protocol_sources)


class AgentApp:
    """The agent's Agora server: the SDK's Flask ``ReceiverServer`` under ``a2wsgi`` for the
    messages, and Starlette for the published documents and the list of them."""

    def __init__(self, agent: AgentEndpoint) -> None:
        self.agent = agent
        self.loop: asyncio.AbstractEventLoop | None = None  # the server's, where agent.answer runs
        self.receiver = LockedReceiver(
            ReceiverMemory(MemoryStorage()),
            NoModel(),
            OurDocumentOnly(),
            NoModel(),
            FixedProgrammer(),
            QuietExecutor(),
            [self.tool()],
            implementation_threshold=1,  # the routine from the first message on (never the responder)
        )
        self.server = ReceiverServer(self.receiver)
        self.app = Starlette(
            routes=[
                Route("/protocols", self.protocols, methods=["GET"]),
                Route("/protocols/{name}", self.document, methods=["GET"]),
                Mount("/", cast(ASGIApp, WSGIMiddleware(self.server.app, workers=RECEIVER_THREADS))),
            ]
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.loop is None:
            self.loop = asyncio.get_running_loop()
        await self.app(scope, receive, send)

    def tool(self) -> Tool:
        """The agent as the receiver's one tool; the routine calls it by name."""
        return Tool(
            "handle_packet",
            self.agent.description,
            {"type": "object", "properties": {"packet": {"type": "string"}}, "required": ["packet"]},
            {"type": "string", "description": "a JSON array of the packets the agent emitted"},
            self.handle_packet,
        )

    def handle_packet(self, packet: Any) -> str:
        """Run in a receiver thread: the agent's frames for one packet, as a JSON array."""
        if not isinstance(packet, str):
            raise ProtocolRejectedError("body must be a string: the packet as JSON text")
        if self.loop is None:  # set by the request that brought the packet: cannot happen
            raise RuntimeError("agora: a packet reached the receiver before its server's loop was known")
        frames = asyncio.run_coroutine_threadsafe(self._answer(packet.encode()), self.loop).result()
        return "[" + ",".join(frame.decode() for frame in frames) + "]"

    async def _answer(self, blob: bytes) -> list[bytes]:
        return [frame async for frame in self.agent.answer(blob, "json")]

    async def protocols(self, request: Request) -> Response:
        """What this agent is and the protocols it speaks, with URLs as the caller reached it
        (from the request's Host: the relay's tap, not the agent's own port)."""
        here = str(request.url.replace(query="")).rstrip("/")
        return JSONResponse(
            {
                "tool": self.agent.tool,
                "description": self.agent.description,
                "consumes": sorted(self.agent.consumes),
                "protocols": [
                    {
                        "name": DOCUMENT_NAME,
                        "hash": PROTOCOL_HASH,
                        "url": f"{here}/{DOCUMENT_NAME}",
                        "multiround": False,
                    }
                ],
            }
        )

    async def document(self, request: Request) -> Response:
        if request.path_params["name"] != DOCUMENT_NAME:
            return PlainTextResponse(f"no protocol document {request.path_params['name']!r}", status_code=404)
        return PlainTextResponse(DOCUMENT)  # text/plain; charset=utf-8: requests decodes it as UTF-8


# --- the relay: the SDK's sender ------------------------------------------------------------------
class TimedTransporter(SimpleSenderTransporter):
    """The SDK's transporter for single-round messages (the same ``requests.post(target,
    json=message)``), with the two things its conversation cannot do: a timeout (it posts with
    none, so a silent agent holds the thread forever) and the receiver's error reply (it reads
    ``body``, which an error reply lacks: ``KeyError: 'body'``, the receiver's message lost)."""

    def __init__(self, timeout: tuple[float | None, float | None]) -> None:
        self.timeout = timeout

    def new_conversation(
        self, target: str, multiround: bool, protocol_hash: str, protocol_sources: list[str]
    ) -> TimedConversation:
        if multiround:
            raise ProtocolRejectedError("multi-round conversations are not part of this protocol")
        return TimedConversation(target, multiround, protocol_hash, protocol_sources, self.timeout)


class TimedConversation(SimpleSenderTransporter.SimpleExternalConversation):
    def __init__(
        self, target: str, multiround: bool, protocol_hash: str, sources: list[str], timeout: Any
    ) -> None:
        super().__init__(target, multiround, protocol_hash, sources)
        self.timeout = timeout

    def __call__(self, message: str) -> dict[str, Any]:
        query = {
            "protocolHash": self.protocol_hash,
            "protocolSources": self.protocol_sources,
            "body": message,
        }
        raw = requests.post(self.target, json=query, timeout=self.timeout)
        if raw.status_code != 200:
            raise ProtocolTransportError(
                f"Error in external conversation: HTTP {raw.status_code} {raw.text[:200]}"
            )
        reply = raw.json()
        if not isinstance(reply, dict) or reply.get("status") != "success" or "body" not in reply:
            message_ = reply.get("message") if isinstance(reply, dict) else None
            raise ProtocolTransportError(f"the receiver's error reply: {message_ or str(reply)[:200]}")
        return {"status": reply["status"], "body": reply["body"]}


def frames_of(body: Any) -> list[bytes]:
    """The frames in a reply's body: a JSON array (as text) of packets."""
    try:
        packets = json.loads(body) if isinstance(body, str) else None
    except ValueError:
        packets = None
    if not isinstance(packets, list) or not all(isinstance(p, dict) for p in packets):
        raise Undelivered(f"agora: the reply's body is not a JSON array of packets: {str(body)[:200]!r}")
    return [canonical_json(p) for p in packets]


class AgoraClient(NativeClient):
    """The relay's Agora sender for one agent: each frame one message, posted by the SDK's sender
    transport (single round, as our document's ``multiround: false`` makes the SDK's sender do).

    Not the SDK's whole ``Sender.execute_task``: with the protocol fixed and a routine that only
    posts the packet, it adds nothing on the wire, but on every call it rebuilds a LangChain
    schema of its ``send_to_server`` tool (13-24 ms of CPU a frame here) and ``ast.parse``s twice
    (the race of gh-106905, seen here as a spurious ``SystemError`` with 8 frames in flight).

    ``requests`` is synchronous, so each frame runs in a thread of this client's pool, and
    ``requests.post`` makes a session for the one call: one new TCP connection per message. The
    relay's ``httpx.AsyncClient`` cannot carry it: the SDK takes no HTTP client (only a
    ``SenderTransporter``), and a transporter on httpx would no longer be the SDK's wire (its
    client, headers and connection handling). Only the httpx client's connect and read timeouts
    are taken, for ``requests``."""

    def __init__(self, peer: Peer, http: httpx.AsyncClient) -> None:
        self.peer = peer
        self.target = peer.base_url + "/"
        # The agent fetches the document from itself: the URL must be one it reaches (in compose,
        # its service name), not the relay's tap on the relay's loopback.
        self.source = (peer.direct_url or peer.base_url) + document_path()
        self.timeout = (http.timeout.connect, http.timeout.read)
        self.transporter = TimedTransporter(self.timeout)
        self.pool = ThreadPoolExecutor(SENDER_THREADS, thread_name_prefix=f"agora-{peer.node_id}")

    async def _in_thread(self, fn: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)

    async def connect(self) -> None:
        """Fetch the document the messages will name, and check its hash (the SDK's function; its
        ``timeout`` is documented in milliseconds but handed to requests, which reads seconds)."""
        url = self.peer.base_url + document_path()  # through the tap: the first request's cost
        try:
            found = await self._in_thread(download_and_verify_protocol, PROTOCOL_HASH, url, self.timeout)
        except requests.RequestException as exc:
            raise Undelivered(f"agora: protocol document {url}: {exc}") from exc
        if found is None:
            raise Undelivered(f"agora: {url} does not serve the protocol {PROTOCOL_HASH}")

    def _post(self, body: str) -> Any:
        with self.transporter.new_conversation(
            self.target, False, PROTOCOL_HASH, [self.source]
        ) as conversation:
            return conversation(body)["body"]

    async def send(self, blob: bytes) -> AsyncIterator[bytes]:
        try:
            body = await self._in_thread(self._post, blob.decode("utf-8"))  # the body is text
        except (requests.RequestException, AgoraError, UnicodeDecodeError) as exc:
            raise Undelivered(f"agora: {type(exc).__name__}: {exc}") from exc
        for frame in frames_of(body):
            yield frame

    async def aclose(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


class AgoraBinding(Binding):
    name = "agora"
    inner = "json"
    streams = False
    mount = "/agora"

    def app(self, agent: AgentEndpoint, keys_dir: Path) -> ASGIApp:
        return AgentApp(agent)

    def client(self, peer: Peer, http: httpx.AsyncClient, stream: bool = False) -> NativeClient:
        return AgoraClient(peer, http)  # stream: nothing to stream (the reply comes whole)


def binding(protocol: str) -> Binding:
    return AgoraBinding()
