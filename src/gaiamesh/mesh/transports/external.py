"""The run's transport with its external agents beside it: each external agent's node id goes to
:class:`~gaiamesh.mesh.external.ExternalPeers` (its protocol's client through a counting tap),
every other to the run's own transport, so the team keeps the run's PROTOCOL and TRANSPORT and
the relay tells the two apart nowhere else."""

from __future__ import annotations

import asyncio

from ...settings import AgentSpec
from ..external import ExternalPeers
from ..faults import FaultModel
from ..frames import Announcement
from ..wireend import WireLayers
from .base import Transport, Wire


class WithExternals:
    """A :class:`~.base.Transport` routing external agents to ``peers``, the rest to ``inner``."""

    def __init__(self, inner: Transport, peers: ExternalPeers) -> None:
        self.wrapped = inner
        self.peers = peers
        self.inner = inner.inner
        self.own_wire = inner.own_wire
        self.rediscovers = inner.rediscovers

    async def open(self) -> None:
        await self.wrapped.open()

    async def reach(self, spec: AgentSpec, deadline: float) -> Announcement | None:
        if self.peers.has(spec.node_id):
            return await self.peers.reach(spec, deadline)
        return await self.wrapped.reach(spec, deadline)

    def connected(self, node_id: str) -> bool:
        return self.peers.connected(node_id) or self.wrapped.connected(node_id)

    def count(self) -> int:
        return self.wrapped.count() + len(self.peers.clients)

    def faults(self, model: FaultModel | None, origin: float) -> FaultModel | None:
        return self.wrapped.faults(model, origin)

    def serve(self, tasks: asyncio.TaskGroup, wire: Wire) -> None:
        self.wrapped.serve(tasks, wire)
        self.peers.serve(wire.frame)

    def send(self, node_id: str, blobs: list[bytes]) -> None:
        if self.peers.has(node_id):
            self.peers.send(node_id, blobs)
        else:
            self.wrapped.send(node_id, blobs)

    async def join(self, spec: AgentSpec, deadline: float) -> Announcement | None:
        return await self.wrapped.join(spec, deadline)

    async def drop(self, node_id: str) -> None:
        await self.wrapped.drop(node_id)

    def carry(self, node_id: str) -> None:
        self.wrapped.carry(node_id)

    def let_go(self, node_id: str) -> None:
        self.wrapped.let_go(node_id)

    def lost_why(self, node_id: str) -> str | None:
        return None if self.peers.has(node_id) else self.wrapped.lost_why(node_id)

    async def close(self) -> None:
        await self.peers.close()
        await self.wrapped.close()

    def layers(self) -> WireLayers | None:
        return self.wrapped.layers()
