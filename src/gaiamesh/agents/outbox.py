"""Where the frames an agent's handled packet emits go: an :class:`Outbox` is the relay's
WebSocket (:class:`WsOutbox`, ``TRANSPORT=relay``) or a native answer (``native.py``'s
``QueueOutbox``)."""

from __future__ import annotations

from typing import Protocol

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from ..mesh.protocols import ProtocolAdapter


class Outbox(Protocol):
    """Where a handled packet's frames go: the relay's WebSocket, or a native answer."""

    adapter: ProtocolAdapter
    # Whether the packet comes from the relay of a run this agent was started for (the relay's
    # WebSocket, or a native request for a run the relay's hello announced): only then does the
    # run get its workspace folder before its tool has work to do.
    from_relay: bool

    async def send(self, blob: bytes) -> bool:
        """Send one frame; False when the peer is gone."""


class WsOutbox:
    """The relay's WebSocket (``TRANSPORT=relay``)."""

    from_relay = True  # the connection was admitted as the relay's (its handshake)

    def __init__(self, ws: ServerConnection, adapter: ProtocolAdapter) -> None:
        self.ws, self.adapter = ws, adapter

    async def send(self, blob: bytes) -> bool:
        try:
            await self.ws.send(blob)
        except ConnectionClosed:
            return False
        return True
