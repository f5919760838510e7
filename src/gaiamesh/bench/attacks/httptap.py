"""An attacker on a protocol's own wire (TRANSPORT=native): between the relay's counting tap and
one agent's native port, it reads HTTP/1.1 messages each way and can alter, hold, copy or
re-point one of them (``HttpTamper``), while it records every body it saw (the tap).

Each message is passed on whole once it has arrived (store and forward), except the body of a
response to a GET that streams events (MCP's standalone SSE stream), which passes as it comes:
it may stay open for the whole run. The decisions are pure (:class:`HttpSplice`); the I/O is
:func:`wiretap.intercept`'s, which carries each connection through a splice.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from ...mesh.protocols import canonical_json
from .judge import flip, flip_letter, objects_in, packet_in, strings_in
from .wiretap import Seen, Send, Way

HEAD_END = b"\r\n\r\n"
MIN_BODY = 64  # a body this short carries no frame (a hello's "ok", an empty 202)


@dataclass
class Message:
    """One HTTP/1.1 message as it crossed: its head, its body (chunks joined) and how it was framed."""

    head: bytes
    body: bytes = b""
    chunked: bool = False
    raw: bytes = b""  # the bytes as they came, head included

    @property
    def start(self) -> str:
        return self.head.split(b"\r\n", 1)[0].decode("latin-1")

    def header(self, name: str) -> str | None:
        for line in self.head.decode("latin-1").split("\r\n")[1:]:
            key, _, value = line.partition(":")
            if key.strip().lower() == name.lower():
                return value.strip()
        return None

    def with_body(self, body: bytes) -> bytes:
        """The message with ``body`` instead, its framing told anew (one chunk, or its length)."""
        lines = self.head[: -len(HEAD_END)].split(b"\r\n")
        if self.chunked:
            framed = (f"{len(body):x}\r\n".encode() + body + b"\r\n" if body else b"") + b"0\r\n\r\n"
            return self.head + framed
        kept = [ln for ln in lines if not ln.lower().startswith(b"content-length:")]
        return b"\r\n".join([*kept, f"content-length: {len(body)}".encode()]) + HEAD_END + body


class _Framer:
    """HTTP/1.1 messages out of one direction's bytes, as they complete."""

    def __init__(self, way: Way, methods: deque[str]) -> None:
        self.way, self.methods = way, methods  # the requests' methods, oldest first (responses pair with them)
        self.buffer = b""
        self.streaming = False  # a response body that passes as it comes (see the module)
        self._pending: Message | None = None  # a message whose head has come, its body not yet
        self.method: str | None = None  # the request method of the message last parsed

    def feed(self, data: bytes) -> tuple[list[Message], bytes]:
        """Complete messages, and bytes to pass at once (a streamed body's)."""
        if self.streaming:
            return [], data
        self.buffer += data
        out: list[Message] = []
        while (msg := self._one()) is not None:
            out.append(msg)
            if self.streaming:
                rest, self.buffer = self.buffer, b""
                return out, rest
        return out, b""

    def _one(self) -> Message | None:
        msg = self._pending or self._head()
        if msg is None:
            return None
        self._pending = msg
        at = len(msg.head)
        if self.way is Way.UP and self._bodiless(msg):
            return self._take(msg, at)
        if (msg.header("transfer-encoding") or "").lower() == "chunked":
            msg.chunked = True
            if self.way is Way.UP and self.method == "GET" and "event-stream" in (msg.header("content-type") or ""):
                self.streaming = True  # the head passes now, the events as they come
                return self._take(msg, at)
            return self._chunks(msg, at)
        length = int(msg.header("content-length") or 0)
        if len(self.buffer) < at + length:
            return None
        msg.body = self.buffer[at : at + length]
        return self._take(msg, at + length)

    def _head(self) -> Message | None:
        end = self.buffer.find(HEAD_END)
        if end < 0:
            return None
        msg = Message(self.buffer[: end + len(HEAD_END)])
        if self.way is Way.DOWN:
            self.method = msg.start.split(" ", 1)[0]
            self.methods.append(self.method)
        else:
            self.method = self.methods.popleft() if self.methods else None
        return msg

    def _bodiless(self, msg: Message) -> bool:
        status = msg.start.split(" ", 2)[1] if " " in msg.start else ""
        return self.method == "HEAD" or status in ("204", "304") or status.startswith("1")

    def _chunks(self, msg: Message, at: int) -> Message | None:
        body = b""
        while True:
            line_end = self.buffer.find(b"\r\n", at)
            if line_end < 0:
                return None
            size = int(self.buffer[at:line_end].split(b";")[0] or b"0", 16)
            if size == 0:
                if self.buffer.find(b"\r\n", line_end + 2) < 0:  # the empty line that ends it (no trailers here)
                    return None
                msg.body = body
                return self._take(msg, line_end + 4)
            if len(self.buffer) < line_end + 2 + size + 2:
                return None
            body += self.buffer[line_end + 2 : line_end + 2 + size]
            at = line_end + 2 + size + 2

    def _take(self, msg: Message, end: int) -> Message:
        msg.raw, self.buffer = self.buffer[:end], self.buffer[end:]
        self._pending = None
        return msg


@dataclass
class HttpTamper:
    """What the attacker does to the first message that carries a frame going ``way``: ``alter``
    (its body through ``alter``), ``hold`` (``hold_s`` late), ``copy`` (a request sent to the
    agent again, on a connection of the attacker's: ``copies`` collects it), ``repoint`` (every
    ``find`` in a directory document a GET fetches becomes ``to``). Fires once."""

    kind: str
    way: Way = Way.UP
    alter: Callable[[bytes], bytes | None] | None = None
    hold_s: float = 0.0
    find: bytes = b""
    to: bytes = b""
    fired: bool = False
    sent: bytes | None = None  # the body the attack put on the wire
    original: bytes | None = None  # the body as it came
    on_copy: Callable[[bytes], None] | None = None  # given the copied request, to send it again
    pending: bytes | None = None  # a copied request whose original the agent has not answered yet

    def answered(self) -> None:
        """The agent answered the copied request's original: the copy goes now (the receiver's
        check sees the original first, as a replay after the fact)."""
        if self.pending is not None and self.on_copy is not None:
            self.on_copy(self.pending)
        self.pending = None

    def wants(self, way: Way, msg: Message, method: str | None) -> bool:
        """Whether this is the message to act on (``method``: the request's, for a response too)."""
        if self.fired or way is not self.way:
            return False
        if self.kind == "repoint":  # a directory document: what a GET fetched
            return way is Way.UP and method == "GET" and bool(self.find) and self.find in msg.body
        # a frame's request, or its answer: a body that carries a packet (not a task's status, say)
        return method not in (None, "GET", "HEAD") and len(msg.body) >= MIN_BODY and packet_in(msg.body) is not None

    def act(self, way: Way, msg: Message) -> list[Send]:
        self.fired, self.original = True, msg.body
        if self.kind == "alter" and self.alter is not None:
            body = self.alter(msg.body)
            if body is None:  # nothing to act on: the message passes, the cell is n/a
                self.fired = False
                return [Send(way, msg.raw)]
            self.sent = body
            return [Send(way, msg.with_body(body))]
        if self.kind == "hold":
            self.sent = msg.body
            return [Send(way, msg.raw, self.hold_s)]
        if self.kind == "copy":  # sent again once the agent has answered the original (answered())
            self.sent = self.pending = msg.raw
            return [Send(way, msg.raw)]
        if self.kind == "repoint":
            self.sent = msg.body.replace(self.find, self.to)
            return [Send(way, msg.with_body(self.sent))]
        raise ValueError(f"unknown tamper {self.kind!r}")


class HttpSplice:
    """One connection to an agent's native port as the attacker sees it (no I/O)."""

    def __init__(self, tamper: HttpTamper | None, seen: Seen) -> None:
        self.tamper, self.seen = tamper, seen
        self._copied = False  # this connection carries the request the tamper copied
        methods: deque[str] = deque()
        self._framers = {Way.DOWN: _Framer(Way.DOWN, methods), Way.UP: _Framer(Way.UP, methods)}

    def feed(self, way: Way, data: bytes) -> list[Send]:
        framer = self._framers[way]
        messages, passing = framer.feed(data)
        out: list[Send] = []
        for msg in messages:
            method = framer.method
            self.seen.frames.append((way, msg.body))
            if way is Way.DOWN and msg.start.startswith("GET /gaiamesh/hello") and not self.seen.request:
                self.seen.request = msg.raw
            if way is Way.DOWN and method == "GET" and self.tamper is not None and self.tamper.kind == "repoint":
                # a directory document names the address it was fetched at: the Host the relay asked
                self.tamper.find = (msg.header("host") or "").encode()
            if way is Way.UP and b"x-gaiamesh-node" in msg.head.lower() and not self.seen.response:
                self.seen.response = msg.head
                if self.seen.on_handshake is not None:
                    self.seen.on_handshake(self.seen.request)
            t = self.tamper
            if t is not None and way is Way.UP and self._copied:
                self._copied = False
                out.append(Send(way, msg.raw))
                t.answered()
                continue
            if t is not None and t.wants(way, msg, method):
                out += t.act(way, msg)
                self._copied = t.kind == "copy"
            else:
                out.append(Send(way, msg.raw))
        if passing:
            self.seen.frames.append((way, passing))
            out.append(Send(way, passing))
        return out

    def close(self, way: Way) -> list[Send]:
        rest = self._framers[way].buffer  # a message cut short passes as it came
        return [Send(way, rest)] if rest else []


def flip_said(body: bytes) -> bytes:
    """One letter's case flipped in the middle of the longest text the body's JSON carries where
    the body shows it as it is (what an agent said, in whatever envelope); else as ``flip``."""
    texts = sorted({t for obj in objects_in(body) for t in strings_in(obj) if len(t) >= 8}, key=len, reverse=True)
    for text in texts:
        at = body.find(text.encode())
        if at >= 0:
            return flip_letter(body, at + len(text.encode()) // 2)
    return flip(body)


def strip_to_packet(body: bytes) -> bytes | None:
    """The bare packet a body carries, as the ``json`` protocol would send it (None: none found)."""
    packet = packet_in(body)
    return None if packet is None else canonical_json(packet)


def halve(body: bytes) -> bytes:
    return body[: len(body) // 2]


__all__ = ["HttpSplice", "HttpTamper", "Message", "flip_said", "halve", "strip_to_packet"]
