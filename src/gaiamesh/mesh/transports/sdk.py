"""``TRANSPORT=native``: each protocol on its own wire, through its own SDK's client.

A thin face over ``mesh/native/gateway.py``'s :class:`Gateway` (a counting tap, the hello and the
protocol's client per agent): a frame is a request of the protocol's client, and the core speaks
the adapter that encodes the packet inside the protocol's body. Recovery is the client's: a frame
it gives up on ends the run. Network faults act at the taps, below the client.
"""

from __future__ import annotations

import asyncio

from ...errors import ConnectError
from ...settings import AgentSpec, Settings
from ..faults import FaultModel
from ..frames import Announcement
from ..native.gateway import Gateway
from ..wireend import WireLayers
from .base import Wire


class SdkTransport:
    """Each agent reached through its protocol's own client, by the gateway."""

    own_wire = True
    rediscovers = False  # the line-up is the one reached at the start

    def __init__(self, settings: Settings, run_id: str, peers: int) -> None:
        self.gateway = Gateway(settings, run_id, peers=peers)
        self.inner = self.gateway.binding.inner
        self.reached: set[str] = set()  # the agents admitted and whose client is open
        self._wire: Wire | None = None

    async def open(self) -> None:
        await self.gateway.start()

    async def reach(self, spec: AgentSpec, deadline: float) -> Announcement | None:
        said = await self.gateway.connect(spec, deadline)
        self.reached.add(spec.node_id)
        return said

    def connected(self, node_id: str) -> bool:
        return node_id in self.reached

    def count(self) -> int:
        return len(self.reached)

    def faults(self, model: FaultModel | None, origin: float) -> FaultModel | None:
        if model is not None:
            # On a protocol's own wire the faults act below its client, at the taps, and the
            # core's links carry none: recovery is the client's, not the relay's.
            self.gateway.faults, self.gateway.origin = model.plan, origin
        return None

    def serve(self, tasks: asyncio.TaskGroup, wire: Wire) -> None:
        self._wire = wire  # the agents' frames come back as the answers to the client's requests

    def carry(self, node_id: str) -> None:
        return None

    def send(self, node_id: str, blobs: list[bytes]) -> None:
        wire = self._wire
        assert wire is not None
        for blob in blobs:
            self.gateway.post(node_id, blob, wire.frame, wire.gave_up)

    async def join(self, spec: AgentSpec, deadline: float) -> Announcement | None:
        raise ConnectError(f"replica {spec.node_id}: the native wire does not take replicas mid-run")

    async def drop(self, node_id: str) -> None:
        return None

    def let_go(self, node_id: str) -> None:
        return None

    def lost_why(self, node_id: str) -> str | None:
        return None

    async def close(self) -> None:
        await self.gateway.aclose()

    def layers(self) -> WireLayers | None:
        return self.gateway.layers()
