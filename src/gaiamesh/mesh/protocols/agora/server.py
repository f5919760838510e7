"""``agora``'s agent side: the ``agora-protocol`` SDK's receiver, with no model, under ``a2wsgi``,
and our protocol document published beside it (the wire: ``binding.py``)."""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable
from typing import Any, cast

from a2wsgi import WSGIMiddleware
from agora.common.errors import ProtocolRejectedError
from agora.common.executor import ExecutorConversation, UnsafeExecutor
from agora.common.storage import Storage
from agora.common.toolformers.base import Tool
from agora.receiver import Receiver, ReceiverMemory, ReceiverServer
from agora.receiver.components.negotiator import ReceiverNegotiator
from agora.receiver.components.programmer import ReceiverProgrammer
from agora.receiver.components.protocol_checker import ReceiverProtocolChecker
from agora.receiver.components.responder import Responder
from agora.utils import compute_hash, extract_metadata
from flask import Flask, jsonify
from flask import Response as FlaskResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ..native import AgentEndpoint
from .envelope import DOCUMENT, PROTOCOL_HASH

DOCUMENT_NAME: str = extract_metadata(DOCUMENT)["name"]  # "gaiamesh-packet-v1", from its front matter
RECEIVER_THREADS = 16  # a2wsgi's pool: frames one agent handles at once (each holds a thread)

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
            f"this agent has no model to read natural language or negotiate with: it speaks only the "
            f"protocol {PROTOCOL_HASH} ({DOCUMENT_NAME}, published at {document_path()} under its Agora URL)"
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


def readable_errors(app: Flask) -> None:
    """Every error reply of the SDK's receiver also carries its reason as ``body``.

    The receiver answers a failure with ``{"status": "error", "message": ...}``, but the SDK's
    sender reads ``status`` and ``body`` from every reply (``SimpleSenderTransporter``), so a
    sender refused (natural language to an agent with no model, a wrong hash, a bad packet)
    failed on ``KeyError: 'body'`` and its user never saw why. ``message`` stays, as the
    receiver writes it."""
    for name in ("main", "continue_conversation"):  # the receiver's two routes
        app.view_functions[name] = _with_body(app.view_functions[name])


def _with_body(view: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(view)
    def replied(*args: Any, **kwargs: Any) -> Any:
        reply = view(*args, **kwargs)
        said = reply.get_json(silent=True) if isinstance(reply, FlaskResponse) else None
        if isinstance(said, dict) and said.get("status") == "error" and "body" not in said:
            return jsonify({**said, "body": f"error: {said.get('message', '')}"})
        return reply

    return replied


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
        readable_errors(self.server.app)
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
