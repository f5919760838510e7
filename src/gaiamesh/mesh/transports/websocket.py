"""``TRANSPORT=relay``: one WebSocket per agent, the relay's own wire (seed 000).

It connects to every agent (``connect.connect_agent``: the handshake and the mesh token's
proofs), reads each one's frames in a task of its own for the whole run, and keeps trying to
reach an agent whose connection dropped: a restarted agent is back in the run. Sends are one
socket write per agent (``connect.write_frames``) and never wait on the agent.
"""

from __future__ import annotations

import asyncio
import time

from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from ...errors import ConnectError
from ...settings import AgentSpec, Settings
from ..connect import connect_agent, write_frames
from ..faults import FaultModel
from ..frames import Announcement
from ..wireend import WireLayers
from .base import Wire

REJOIN_ATTEMPT_S = 2.0  # one round of connection attempts to a lost agent (repeated until the run ends)


class WebSocketTransport:
    """The relay's WebSocket to each agent, and a reader per connection."""

    own_wire = False
    rediscovers = True  # replicas of AGENTS' dns: entries found mid-run join it

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.inner = settings.protocol
        self.conns: dict[str, ClientConnection] = {}
        self.specs: dict[str, AgentSpec] = {}
        self.down: dict[str, str] = {}  # node id -> why its connection dropped (it is being reached again)
        self.readers: dict[str, asyncio.Task[None]] = {}
        self.closing = False
        self._tasks: asyncio.TaskGroup | None = None
        self._wire: Wire | None = None

    async def open(self) -> None:
        return None

    async def reach(self, spec: AgentSpec, deadline: float) -> Announcement | None:
        ws, said = await connect_agent(spec, self.settings, deadline)
        self.conns[spec.node_id], self.specs[spec.node_id] = ws, spec
        return said

    def connected(self, node_id: str) -> bool:
        return node_id in self.conns

    def count(self) -> int:
        return len(self.conns)

    def faults(self, model: FaultModel | None, origin: float) -> FaultModel | None:
        return model  # the relay's own links carry them (the core's fault model)

    def serve(self, tasks: asyncio.TaskGroup, wire: Wire) -> None:
        self._tasks, self._wire = tasks, wire
        for node_id in list(self.conns):
            self.carry(node_id)

    def carry(self, node_id: str) -> None:
        assert self._tasks is not None and self._wire is not None
        self.readers[node_id] = self._tasks.create_task(self._read(self._wire, node_id), name=f"reader-{node_id}")

    def send(self, node_id: str, blobs: list[bytes]) -> None:
        if (ws := self.conns.get(node_id)) is not None:
            write_frames(ws, blobs)

    async def join(self, spec: AgentSpec, deadline: float) -> Announcement | None:
        return await self.reach(spec, deadline)

    async def drop(self, node_id: str) -> None:
        if (ws := self.conns.pop(node_id, None)) is not None:
            await ws.close()

    def let_go(self, node_id: str) -> None:
        if (reader := self.readers.pop(node_id, None)) is not None:
            # Its address is gone, so its connect attempts fail. One that succeeded in this very
            # pass of the loop would be left open and unread: a narrow race, not handled.
            reader.cancel()
        self.down.pop(node_id, None)

    def lost_why(self, node_id: str) -> str | None:
        return self.down.get(node_id)

    async def close(self) -> None:
        self.closing = True
        for node_id in self.down:  # their readers are waiting for the agent to come back
            if (reader := self.readers.get(node_id)) is not None:
                reader.cancel()
        await asyncio.gather(*(ws.close() for ws in self.conns.values()), return_exceptions=True)

    def layers(self) -> WireLayers | None:
        return None

    async def _read(self, wire: Wire, node_id: str) -> None:
        """Carry one agent's frames for the whole run. When its connection drops, the agent is
        reported lost and the relay keeps trying to reach it: a restarted agent rejoins the run
        and gets traffic again (:meth:`close` cancels the trying when the run ends)."""
        spec, ws = self.specs[node_id], self.conns[node_id]
        while True:
            reason = "connection closed"
            try:
                async for message in ws:
                    wire.frame(node_id, message.encode() if isinstance(message, str) else message)
            except ConnectionClosed as exc:
                reason = f"connection closed ({exc.rcvd.code if exc.rcvd else 'no close frame'})"
            if self.closing:
                return
            self.conns.pop(node_id, None)
            self.down[node_id] = reason
            if not wire.lost(node_id, reason):
                return  # the run ended: nobody waits for it
            ws, said = await self._reach_again(spec)
            self.conns[node_id] = ws
            del self.down[node_id]
            wire.back(node_id, said)

    async def _reach_again(self, spec: AgentSpec) -> tuple[ClientConnection, Announcement | None]:
        """Connect to a lost agent as soon as it answers again (until cancelled)."""
        while True:
            try:
                return await connect_agent(spec, self.settings, time.monotonic() + REJOIN_ATTEMPT_S)
            except ConnectError:
                continue  # connect_agent waited between its attempts; the agent is not back yet
