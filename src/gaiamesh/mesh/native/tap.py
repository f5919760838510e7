"""The counting tap: a TCP proxy in the relay's process in front of each agent's native port.

The relay's protocol clients connect to the tap, the tap to the agent, so every byte of the
native wire crosses a socket the relay owns whatever the SDK does with its connections. Per
connection it counts the bytes each way as the socket moved them, the HTTP messages in them and
their bodies (parsed with h11, so request lines, headers, chunking and SSE framing are told
apart from the bodies), and the kernel's own count of the agent-side socket (``TCP_INFO``:
segments and bytes), from which the IP and TCP headers follow. Counting is plain code
(:class:`HttpMeter`, :class:`TapBooks`); :class:`Tap` only moves bytes and owns its tasks.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import socket
import struct
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import h11

from ..wireend import WireLayers
from .tapfaults import TapFaults

# struct tcp_info (linux/tcp.h): tcpi_options is byte 5; tcpi_bytes_received (u64) at 128,
# tcpi_segs_out and tcpi_segs_in (u32) at 136 and 140, tcpi_bytes_sent (u64) at 200.
_TCP_INFO_LEN = 208
_TCPI_OPT_TIMESTAMPS = 1
IP_TCP_HEADER = 40  # IPv4 (20) + TCP (20) without options
TIMESTAMP_OPTION = 12  # the timestamp option, padded: on every segment when negotiated


@dataclass(frozen=True)
class TcpInfo:
    """What the kernel counted on one socket."""

    bytes_sent: int
    bytes_received: int
    segs_out: int
    segs_in: int
    timestamps: bool

    @property
    def header_bytes(self) -> int:
        """IP and TCP header bytes of every segment this socket sent and received."""
        per_segment = IP_TCP_HEADER + (TIMESTAMP_OPTION if self.timestamps else 0)
        return (self.segs_out + self.segs_in) * per_segment


def parse_tcp_info(raw: bytes) -> TcpInfo | None:
    """``TCP_INFO`` as this kernel lays it out; None when it is too short (an older kernel)."""
    if len(raw) < _TCP_INFO_LEN:
        return None
    (received,) = struct.unpack_from("=Q", raw, 128)
    segs_out, segs_in = struct.unpack_from("=II", raw, 136)
    (sent,) = struct.unpack_from("=Q", raw, 200)
    return TcpInfo(sent, received, segs_out, segs_in, bool(raw[5] & _TCPI_OPT_TIMESTAMPS))


def tcp_info(sock: socket.socket) -> TcpInfo | None:
    try:
        return parse_tcp_info(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_LEN))
    except (OSError, AttributeError):  # not Linux, or the socket is gone
        return None


@dataclass(eq=False)
class Exchange:
    """One request and its response as the tap carried them: the bytes each way, those of the
    response's first read (its head), and whether the response ended."""

    number: int  # the tap's order of requests, over all its connections
    up: int = 0
    down: int = 0
    head: int = 0
    ended: bool = False

    @property
    def bytes(self) -> int:
        """Both ways; a response still open (a stream the protocol holds for the session, as MCP's
        standing GET) as far as its head, so that what it carries later is not its opening's."""
        return self.up + (self.down if self.ended else self.head)


class HttpMeter:
    """Reads one connection's HTTP/1.1 both ways as a passive observer and counts its messages
    and their body bytes. h11 parses each side; the events one side parses are replayed into
    the other side's parser, so each knows where the other's messages begin and end. A stream
    h11 cannot parse is still counted in bytes (``parsed`` turns false)."""

    def __init__(self, numbering: Callable[[], int] | None = None) -> None:
        self._requests = h11.Connection(h11.SERVER)  # reads what the client sends
        self._responses = h11.Connection(h11.CLIENT)  # reads what the server sends
        self._numbering = numbering or itertools.count().__next__  # the tap's order of requests
        self.parsed = True
        self.requests = 0
        self.responses = 0
        self.body_up = 0
        self.body_down = 0
        self.exchanges: list[Exchange] = []  # this connection's, in order

    def up(self, data: bytes) -> None:
        begun = len(self.exchanges)
        self._feed(self._requests, self._responses, data, up=True)
        # a request's bytes are its exchange's (HTTP/1.1 clients here do not pipeline)
        if len(self.exchanges) > begun:
            self.exchanges[begun].up += len(data)
        elif self.exchanges:
            self.exchanges[-1].up += len(data)

    def down(self, data: bytes) -> None:
        answered = self.responses
        self._feed(self._responses, self._requests, data, up=False)
        # a response answers the oldest request not yet answered on its connection
        if self.responses > answered and answered < len(self.exchanges):
            self.exchanges[answered].head += len(data)
            self.exchanges[answered].down += len(data)
        elif 0 < self.responses <= len(self.exchanges):
            self.exchanges[self.responses - 1].down += len(data)

    def _feed(self, reader: h11.Connection, other: h11.Connection, data: bytes, up: bool) -> None:
        if not self.parsed:
            return
        try:
            reader.receive_data(data)
            while isinstance(event := reader.next_event(), h11.Event):
                self._count(event, up)
                if isinstance(event, h11.ConnectionClosed):
                    break
                other.send(event)  # the other parser learns the message's framing
                self._next_cycle()
        except (h11.ProtocolError, ValueError):
            self.parsed = False

    def _count(self, event: object, up: bool) -> None:
        if isinstance(event, h11.Request):
            self.requests += 1
            self.exchanges.append(Exchange(self._numbering()))
        elif isinstance(event, h11.Response):
            self.responses += 1
        elif isinstance(event, h11.EndOfMessage) and not up and 0 < self.responses <= len(self.exchanges):
            self.exchanges[self.responses - 1].ended = True
        elif isinstance(event, h11.Data):
            if up:
                self.body_up += len(event.data)
            else:
                self.body_down += len(event.data)

    def _next_cycle(self) -> None:
        both = (self._requests, self._responses)
        if all(c.our_state is h11.DONE and c.their_state is h11.DONE for c in both):
            for c in both:
                c.start_next_cycle()


@dataclass(eq=False)  # each is one connection: kept in sets by identity
class ConnCount:
    """One connection the tap carried."""

    up: int = 0  # bytes from the relay's client toward the agent
    down: int = 0  # bytes from the agent back
    meter: HttpMeter = field(default_factory=HttpMeter)
    tcp: TcpInfo | None = None  # the agent-side socket, read as it closed (or at the run's end)
    refused: str = ""  # the tap could not reach the agent
    reset: bool = False  # network faults lost a request on it: both ends were reset


@dataclass
class TapBooks:
    """Every connection of one agent's tap, in the order they were opened."""

    conns: list[ConnCount] = field(default_factory=list)
    _numbers: Iterator[int] = field(default_factory=itertools.count)

    def open(self) -> ConnCount:
        count = ConnCount(meter=HttpMeter(self._numbers.__next__))
        self.conns.append(count)
        return count

    def first_bytes(self, requests: int) -> int:
        """The bytes of the first ``requests`` exchanges this tap carried (both ways, whole once
        they ended): read at the run's end, when every one of them has ended or stays open."""
        exchanges = sorted((e for c in self.conns for e in c.meter.exchanges), key=lambda e: e.number)
        return sum(e.bytes for e in exchanges[:requests])

    def totals(self) -> WireLayers:
        done = [c for c in self.conns if not c.refused]
        tcp = [c.tcp for c in done if c.tcp is not None]
        return WireLayers(
            http_tx=sum(c.up for c in done), http_rx=sum(c.down for c in done),
            body_tx=sum(c.meter.body_up for c in done), body_rx=sum(c.meter.body_down for c in done),
            requests=sum(c.meter.requests for c in done), connections=len(done),
            connections_reused=sum(1 for c in done if c.meter.requests > 1),
            segs_out=sum(t.segs_out for t in tcp), segs_in=sum(t.segs_in for t in tcp),
            ip_tcp_header_bytes=sum(t.header_bytes for t in tcp),
            tcp_bytes_sent=sum(t.bytes_sent for t in tcp), tcp_bytes_received=sum(t.bytes_received for t in tcp),
            unparsed=sum(1 for c in done if not c.meter.parsed), refused=len(self.conns) - len(done),
            resets=sum(1 for c in done if c.reset),
        )  # fmt: skip


class Tap:
    """A counting TCP proxy on 127.0.0.1 in front of one agent's ``host:port``."""

    def __init__(self, host: str, port: int, faults: TapFaults | None = None, origin: float = 0.0) -> None:
        self.target = (host, port)
        self.faults = faults  # FAULT_* on the native wire (tapfaults.py); None: bytes pass at once
        self.origin = origin  # the run's t=0 (time.monotonic()), for the faults' windows
        self.books = TapBooks()
        self.port = 0
        self._server: asyncio.Server | None = None
        self._open: set[tuple[ConnCount, asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._carry, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def _carry(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)  # the server owns the handler task; close() waits for it
        count = self.books.open()
        try:
            agent_r, agent_w = await asyncio.open_connection(*self.target)
        except OSError as exc:
            count.refused = f"{type(exc).__name__}: {exc}"
            client_w.close()
            self._tasks.discard(task)
            return
        self._open.add((count, agent_w, client_w))
        try:
            def snapshot() -> None:  # the kernel's counts, read while the agent's socket is open
                count.tcp = tcp_info(agent_w.get_extra_info("socket")) or count.tcp

            async with asyncio.TaskGroup() as pumps:
                ends = (agent_w, client_w)
                pumps.create_task(self._pump(client_r, agent_w, count, up=True, ends=ends, snapshot=snapshot))
                pumps.create_task(self._pump(agent_r, client_w, count, up=False, ends=ends, snapshot=snapshot))
        finally:
            self._open.discard((count, agent_w, client_w))
            count.tcp = tcp_info(agent_w.get_extra_info("socket")) or count.tcp
            for w in (agent_w, client_w):
                w.close()
            self._tasks.discard(task)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, count: ConnCount, up: bool,
                    ends: tuple[asyncio.StreamWriter, asyncio.StreamWriter],
                    snapshot: Callable[[], None]) -> None:  # fmt: skip
        """Copy one direction until it ends, counting (and, under network faults, waiting and
        resetting as they decide); the other direction then ends too."""
        try:
            while data := await reader.read(65536):
                requests = count.meter.requests
                if up:
                    count.up += len(data)
                    count.meter.up(data)
                else:
                    count.down += len(data)
                    count.meter.down(data)
                if self.faults is not None:
                    if up and count.meter.requests > requests and self.faults.lose_request():
                        count.reset = True
                        snapshot()
                        _reset(*ends)
                        return
                    now = time.monotonic() - self.origin
                    wait = self.faults.release_at(up, now) - now
                    if wait > 0:
                        await asyncio.sleep(wait)  # the network's delay, not a synchronization
                writer.write(data)
                await writer.drain()
            snapshot()  # before either end closes: a closed socket has no counts to read
            if writer.can_write_eof():
                writer.write_eof()
        except (ConnectionError, OSError):
            snapshot()
            writer.close()  # a reset on one side resets the other: the client sees what happened

    def read_open(self) -> None:
        """Read the kernel's counts of connections still open (the run ends with them open)."""
        for count, agent_w, _ in list(self._open):
            count.tcp = tcp_info(agent_w.get_extra_info("socket")) or count.tcp

    async def close(self) -> None:
        """Stop accepting, read the kernel's counts, then close every connection: its pumps end
        on their own (the handler tasks are the server's; they are awaited, not cancelled)."""
        self.read_open()
        if self._server is not None:
            self._server.close()
        for _, agent_w, client_w in list(self._open):
            agent_w.close()
            client_w.close()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()


def _reset(*writers: asyncio.StreamWriter) -> None:
    """Close with a reset (RST), not a FIN: SO_LINGER 0, then abort."""
    for w in writers:
        sock = w.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        w.transport.abort()
