"""``agora``'s relay side: the ``agora-protocol`` SDK's sender transport, one message a frame
(the wire: ``binding.py``)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import requests
from agora.common.errors import ProtocolError as AgoraError
from agora.common.errors import ProtocolRejectedError, ProtocolTransportError
from agora.sender.components.transporter import SimpleSenderTransporter
from agora.utils import download_and_verify_protocol

from ..base import canonical_json
from ..native import NativeClient, Peer, Undelivered
from .envelope import PROTOCOL_HASH
from .server import document_path

SENDER_THREADS = 16  # one client's pool: frames in flight to one agent (requests blocks a thread)


class TimedTransporter(SimpleSenderTransporter):
    """The SDK's transporter for single-round messages (the same ``requests.post(target,
    json=message)``), with the two things its conversation cannot do: a timeout (it posts with
    none, so a silent agent holds the thread forever) and the receiver's error reply as an error
    (it hands on ``status`` and ``body`` alike; the SDK's own receiver's error reply has no
    ``body``, ``KeyError: 'body'``, which ours adds: ``server.readable_errors``)."""

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
