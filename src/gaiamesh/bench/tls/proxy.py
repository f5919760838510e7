"""The counting TCP proxy of ``bench-tls``: in front of an agent, it forwards every connection
unchanged and counts its TCP payload each way, so the bytes a handshake, a close and a frame take
are read at the socket."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Tally:
    """The TCP payload one proxied connection carried each way, so far."""

    up: int = 0  # relay -> agent
    down: int = 0  # agent -> relay
    done: asyncio.Event = field(default_factory=asyncio.Event)  # both ways have ended

    def total(self) -> int:
        return self.up + self.down


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, count: Callable[[int], None]) -> None:
    with contextlib.suppress(ConnectionError):
        while data := await reader.read(65536):
            count(len(data))  # counted before it is forwarded: the peer cannot see it uncounted
            writer.write(data)
            await writer.drain()
    with contextlib.suppress(OSError, RuntimeError):
        writer.write_eof()


class CountingProxy:
    """A TCP proxy on a free loopback port in front of the agent on ``agent_port``: it forwards
    every connection unchanged and counts its bytes each way (one :class:`Tally` a connection)."""

    def __init__(self, agent_port: int) -> None:
        self.agent_port = agent_port
        self.tallies: list[Tally] = []
        self.port = 0
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> CountingProxy:
        self._server = await asyncio.start_server(self._carry, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()

    async def _carry(self, relay_r: asyncio.StreamReader, relay_w: asyncio.StreamWriter) -> None:
        tally = Tally()
        self.tallies.append(tally)
        try:
            agent_r, agent_w = await asyncio.open_connection("127.0.0.1", self.agent_port)
        except OSError:
            relay_w.close()
            tally.done.set()
            return
        up: Callable[[int], None] = lambda n: setattr(tally, "up", tally.up + n)  # noqa: E731
        down: Callable[[int], None] = lambda n: setattr(tally, "down", tally.down + n)  # noqa: E731
        try:
            await asyncio.gather(_pump(relay_r, agent_w, up), _pump(agent_r, relay_w, down))
        finally:
            agent_w.close()
            relay_w.close()
            tally.done.set()

