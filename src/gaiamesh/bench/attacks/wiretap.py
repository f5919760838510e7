"""An attacker on the wire between the relay and one agent: it passes the HTTP handshake through
as it is, then reads the WebSocket frames each way with websockets' own parser and can alter,
copy, hold or reorder one of them (``Tamper``), while it records every frame it saw (the tap).

The decisions are pure (:class:`Splice`: bytes in, what to write and when out); :func:`intercept`
only moves bytes. Attack traffic stays on loopback, between this run's relay and its agent.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from websockets.frames import Frame, Opcode
from websockets.streams import StreamReader

HEADERS_END = b"\r\n\r\n"


class Way(Enum):
    DOWN = "relay->agent"  # the relay is the WebSocket client: its frames are masked
    UP = "agent->relay"


@dataclass
class Seen:
    """What the tap recorded on one link: the handshake and every data frame's payload."""

    request: bytes = b""  # the relay's last HTTP upgrade request, as sent
    response: bytes = b""  # the agent's answer to it, as sent
    frames: list[tuple[Way, bytes]] = field(default_factory=list)
    on_handshake: Callable[[bytes], None] | None = None  # given each upgrade request once answered


@dataclass(frozen=True)
class Send:
    """Write ``data`` toward ``way``'s receiver after ``delay_s`` (0: at once, in order)."""

    way: Way
    data: bytes
    delay_s: float = 0.0


Alter = Callable[[bytes], bytes | None]  # None: nothing to do to this frame


@dataclass
class Tamper:
    """What the attacker does to the first data frame that goes ``way`` (``nth``: the n-th, from 1).

    ``kind``: ``alter`` (send ``alter(payload)`` instead), ``copy`` (send it, then the same frame
    again), ``hold`` (send it ``hold_s`` late), ``swap`` (send the next data frame first),
    ``rehead`` (the relay's upgrade request through ``alter``, not a frame, and the agent's
    answer to it through ``reanswer`` when one is given). Each fires once; what it sent is kept (``sent``) so the run's own records can be searched for it."""

    kind: str
    way: Way = Way.UP
    nth: int = 1
    alter: Alter | None = None
    reanswer: Callable[[bytes], bytes] | None = None  # a ``rehead``'s: the agent's answer rewritten
    hold_s: float = 0.0
    sent: bytes | None = None  # the payload the attack put on the wire
    fired: bool = False
    after: int = 0  # data frames the connection a ``rehead`` rewrote carried afterwards
    answer: bytes = b""  # the agent's answer to the request a ``rehead`` rewrote
    _count: int = 0
    _held: Frame | None = None

    def take(self, frame: Frame) -> list[tuple[Frame, float]] | None:
        """The frames to send for ``frame`` and their delays; None: pass it as it came."""
        if self._held is not None:  # swap: this one first, then the held one
            held, self._held = self._held, None
            return [(frame, 0.0), (held, 0.0)]
        self._count += 1
        if self.fired or self._count != self.nth:
            return None
        self.fired, self.sent = True, bytes(frame.data)
        if self.kind == "alter" and self.alter is not None:
            data = self.alter(bytes(frame.data))
            if data is None:  # the attack found nothing to act on: the frame passes, the cell is n/a
                self.sent = None
                return None
            self.sent = data
            return [(Frame(frame.opcode, data, frame.fin), 0.0)]
        if self.kind == "copy":
            return [(frame, 0.0), (frame, 0.0)]
        if self.kind == "hold":
            return [(frame, self.hold_s)]
        if self.kind == "swap":
            self._held = frame
            return []
        raise ValueError(f"unknown tamper {self.kind!r}")

    def release(self) -> Frame | None:
        """A swapped frame still held when its link closes (no next frame came)."""
        held, self._held = self._held, None
        return held


class _Frames:
    """WebSocket frames out of one direction's bytes (websockets' parser, fed as bytes come)."""

    def __init__(self, mask: bool) -> None:
        self.reader = StreamReader()
        self.mask = mask
        self._parser: Generator[None, None, Frame] | None = None

    def feed(self, data: bytes) -> list[Frame]:
        self.reader.feed_data(data)
        frames: list[Frame] = []
        while True:
            if self._parser is None:
                if not self.reader.buffer:
                    return frames
                self._parser = Frame.parse(self.reader.read_exact, mask=self.mask, max_size=None)
            try:
                next(self._parser)
            except StopIteration as done:
                frames.append(done.value)
                self._parser = None
            else:
                return frames  # a frame's bytes are still on their way


class Splice:
    """One relay-agent connection as the attacker sees it: bytes in, :class:`Send` out (no I/O)."""

    def __init__(self, tamper: Tamper | None, seen: Seen) -> None:
        self.tamper, self.seen = tamper, seen
        self.upgraded = False
        self._reheaded = False  # this connection's upgrade request is the one a rehead rewrote
        self._upgrade = False  # the request asks for a WebSocket (not a health check or a fetch)
        self._head = {Way.DOWN: b"", Way.UP: b""}
        self._headed = {Way.DOWN: False, Way.UP: False}  # its HTTP head has passed
        self._framed = {Way.DOWN: False, Way.UP: False}
        self._frames = {Way.DOWN: _Frames(mask=True), Way.UP: _Frames(mask=False)}

    def feed(self, way: Way, data: bytes) -> list[Send]:
        if not self._framed[way]:
            return self._http(way, data)
        out: list[Send] = []
        for frame in self._frames[way].feed(data):
            if frame.opcode in (Opcode.TEXT, Opcode.BINARY):
                self.seen.frames.append((way, bytes(frame.data)))
                if self._reheaded and self.tamper is not None:
                    self.tamper.after += 1
                taken = self.tamper.take(frame) if self.tamper is not None and self.tamper.way is way else None
                if taken is not None:
                    out += [Send(way, self._bytes(way, f), delay) for f, delay in taken]
                    continue
            out.append(Send(way, self._bytes(way, frame)))
        return out

    def close(self, way: Way) -> list[Send]:
        held = self.tamper.release() if self.tamper is not None and self.tamper.way is way else None
        return [] if held is None else [Send(way, self._bytes(way, held))]

    def _http(self, way: Way, data: bytes) -> list[Send]:
        """The handshake passes as it is; a connection that is not upgraded (a health check, a
        workspace fetch, a refusal) passes whole."""
        if self._headed[way]:
            return [Send(way, data)]
        head = self._head[way] + data
        end = head.find(HEADERS_END)
        if end < 0:
            self._head[way] = head
            return []
        end += len(HEADERS_END)
        if way is Way.DOWN:
            self._upgrade = b"\r\nupgrade: websocket" in head[:end].lower()
            if self._upgrade:
                self.seen.request = head[:end]
                head = self._rehead(head[:end]) + head[end:]
                end = head.find(HEADERS_END) + len(HEADERS_END)
        else:
            if self._upgrade:
                self.seen.response = head[:end]
                if self._reheaded and self.tamper is not None:
                    self.tamper.answer = head[:end]  # the agent's answer to the rewritten request
                    if self.tamper.reanswer is not None:
                        head = self.tamper.reanswer(head[:end]) + head[end:]
                        end = head.find(HEADERS_END) + len(HEADERS_END)
                if self.seen.on_handshake is not None:
                    self.seen.on_handshake(self.seen.request)
            self.upgraded = head.startswith(b"HTTP/1.1 101")
            self._framed[Way.DOWN] = self._framed[Way.UP] = self.upgraded
        self._head[way], self._headed[way] = b"", True
        out = [Send(way, head[:end])]
        if end < len(head):
            out += self.feed(way, head[end:])
        return out

    def _rehead(self, head: bytes) -> bytes:
        """The relay's upgrade request as a ``rehead`` tamper rewrites it (once)."""
        t = self.tamper
        if t is None or t.kind != "rehead" or t.fired or t.alter is None:
            return head
        changed = t.alter(head)
        if changed is None:
            return head
        t.fired, t.sent, self._reheaded = True, changed, True
        return changed

    @staticmethod
    def _bytes(way: Way, frame: Frame) -> bytes:
        return frame.serialize(mask=way is Way.DOWN)


class Splicer(Protocol):
    """What :func:`intercept` carries a connection through: bytes in, what to write out."""

    def feed(self, way: Way, data: bytes) -> list[Send]: ...

    def close(self, way: Way) -> list[Send]: ...


APP_DATA = 23  # a TLS record's content type for everything encrypted (TLS 1.3 hides the rest)


@dataclass(frozen=True)
class Record:
    """One TLS record as the tap sees it: its type, its length and its bytes (all ciphertext)."""

    type: int
    data: bytes  # the whole record, header included


class _Records:
    """TLS records out of one direction's bytes (a 5-byte header: type, version, length)."""

    def __init__(self) -> None:
        self.buffer = b""

    def feed(self, data: bytes) -> list[Record]:
        self.buffer += data
        out: list[Record] = []
        while len(self.buffer) >= 5:
            end = 5 + int.from_bytes(self.buffer[3:5], "big")
            if len(self.buffer) < end:
                break
            out.append(Record(self.buffer[0], self.buffer[:end]))
            self.buffer = self.buffer[end:]
        return out


class TlsSplice:
    """A relay-agent connection under WIRE_TLS as the attacker sees it: records it cannot read.

    It records every record's bytes (the tap) and acts on one application-data record going
    ``tamper.way``: the ``nth`` from the third turn of that direction on, where the frames travel
    (a turn is a run of records one way: the handshake, then the tickets and the upgrade, then
    the frames; the attacker goes by order, since it sees no content). An ``alter`` flips the
    middle byte of the record's ciphertext (the protocol's own alteration needs a frame it
    cannot see); copy, hold and swap act on the record as they act on a frame."""

    def __init__(self, tamper: Tamper | None, seen: Seen) -> None:
        self.tamper, self.seen = tamper, seen
        self.upgraded = False  # never seen: the upgrade is encrypted
        self._records = {Way.DOWN: _Records(), Way.UP: _Records()}
        self._turns = {Way.DOWN: 0, Way.UP: 0}
        self._last: Way | None = None
        self._count = 0
        self._held: bytes | None = None

    def feed(self, way: Way, data: bytes) -> list[Send]:
        out: list[Send] = []
        for record in self._records[way].feed(data):
            if self._last is not way:
                self._turns[way] += 1
                self._last = way
                if way is Way.DOWN and self._turns[way] == 3:
                    self._handshake_done()
            self.seen.frames.append((way, record.data))
            out += self._take(way, record)
        return out

    def _handshake_done(self) -> None:
        """The relay's first two turns (its hello, then its finish and upgrade request), as a
        replay of the handshake would send them."""
        self.seen.request = b"".join(d for w, d in self.seen.frames if w is Way.DOWN)
        if self.seen.on_handshake is not None:
            self.seen.on_handshake(self.seen.request)

    def _take(self, way: Way, record: Record) -> list[Send]:
        t = self.tamper
        if t is None or t.way is not way or record.type != APP_DATA or self._turns[way] < 3:
            return [Send(way, record.data)]
        if self._held is not None:  # swap: this record first, then the held one
            held, self._held = self._held, None
            return [Send(way, record.data), Send(way, held)]
        self._count += 1
        if t.fired or self._count != t.nth:
            return [Send(way, record.data)]
        t.fired, t.sent = True, record.data
        if t.kind == "alter":
            middle = 5 + (len(record.data) - 5) // 2
            t.sent = record.data[:middle] + bytes([record.data[middle] ^ 0x20]) + record.data[middle + 1:]
            return [Send(way, t.sent)]
        if t.kind == "copy":
            return [Send(way, record.data), Send(way, record.data)]
        if t.kind == "hold":
            return [Send(way, record.data, t.hold_s)]
        if t.kind == "swap":
            self._held = record.data
            return []
        raise ValueError(f"unknown tamper {t.kind!r}")

    def close(self, way: Way) -> list[Send]:
        held, self._held = self._held, None
        return [] if held is None or self.tamper is None or self.tamper.way is not way else [Send(way, held)]


async def intercept(listen_port: int, agent_port: int, splice: Callable[[], Splicer],
                    ready: asyncio.Event, stop: asyncio.Event) -> None:  # fmt: skip
    """Listen on ``listen_port`` and carry each connection to the agent on ``agent_port``
    through a new :class:`Splicer` (:class:`Splice`, :class:`TlsSplice`, ``httptap.HttpSplice``),
    until ``stop``."""

    handlers: set[asyncio.Task[None]] = set()
    closing: list[Callable[[], None]] = []  # what ends each open connection when the run is over

    async def carry(relay_r: asyncio.StreamReader, relay_w: asyncio.StreamWriter) -> None:
        handlers.add(asyncio.current_task())  # type: ignore[arg-type]
        agent_r, agent_w = await asyncio.open_connection("127.0.0.1", agent_port)
        s = splice()
        writers = {Way.DOWN: agent_w, Way.UP: relay_w}
        held: set[asyncio.Task[None]] = set()
        async with asyncio.TaskGroup() as tasks:

            def end() -> None:
                for w in (agent_w, relay_w):
                    w.close()  # the pumps read their end of file and return
                for t in held:
                    t.cancel()  # a frame still held when the run is over is not sent

            closing.append(end)

            async def write(send: Send) -> None:
                if send.delay_s:
                    # the attack itself: the frame is held on the wire this long
                    await asyncio.sleep(send.delay_s)
                with contextlib.suppress(ConnectionError, RuntimeError):
                    writers[send.way].write(send.data)

            async def pump(reader: asyncio.StreamReader, way: Way) -> None:
                with contextlib.suppress(ConnectionError):
                    while data := await reader.read(65536):
                        for send in s.feed(way, data):
                            if send.delay_s:
                                held.add(tasks.create_task(write(send)))
                            else:
                                await write(send)
                for send in s.close(way):
                    await write(send)
                with contextlib.suppress(OSError, RuntimeError):
                    writers[way].write_eof()

            tasks.create_task(pump(relay_r, Way.DOWN))
            tasks.create_task(pump(agent_r, Way.UP))
        for w in (agent_w, relay_w):
            w.close()

    server = await asyncio.start_server(carry, "127.0.0.1", listen_port)
    async with server:
        ready.set()
        await stop.wait()
        for end in closing:
            end()
        if handlers:  # each connection's handler ends on its own once its sockets are closed
            await asyncio.wait(handlers, timeout=5)
