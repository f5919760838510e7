"""What the relay asks of a transport (:class:`Transport`), and what a transport tells the relay
as it happens (:class:`Wire`): frames that came in, agents lost and back, frames given up on."""

from __future__ import annotations

import asyncio
from typing import Protocol

from ...settings import AgentSpec
from ..faults import FaultModel
from ..frames import Announcement
from ..wireend import WireLayers


class Wire(Protocol):
    """The relay's side of a transport: each call hands one event to the relay's core."""

    def frame(self, node_id: str, blob: bytes) -> None:
        """A frame from agent ``node_id`` came in."""

    def lost(self, node_id: str, reason: str) -> bool:
        """Agent ``node_id``'s connection dropped; True: try to reach it again."""

    def back(self, node_id: str, said: Announcement | None) -> None:
        """Lost agent ``node_id`` answered again (``said``: its handshake's announcement)."""

    def gave_up(self, node_id: str, why: str) -> None:
        """The transport gave up on a frame to agent ``node_id``."""


class Transport(Protocol):
    """One way of moving a run's frames between the relay and its agents."""

    inner: str  # the protocol whose adapter the relay's core speaks inside this wire's messages
    own_wire: bool  # each protocol on its own wire (a line of the relay's report says so)
    rediscovers: bool  # whether replicas found by DNS while the run goes on can join it

    async def open(self) -> None:
        """Get ready to reach agents (before the first :meth:`reach`)."""

    async def reach(self, spec: AgentSpec, deadline: float) -> Announcement | None:
        """Connect to one agent and return what it announced (raises ``ConnectError``)."""

    def connected(self, node_id: str) -> bool:
        """Whether the transport holds a working way to agent ``node_id``."""

    def count(self) -> int:
        """How many agents it holds a way to."""

    def faults(self, model: FaultModel | None, origin: float) -> FaultModel | None:
        """Take the network faults it imposes itself; return those the core's links must carry."""

    def serve(self, tasks: asyncio.TaskGroup, wire: Wire) -> None:
        """Start carrying the agents' frames to ``wire`` (until :meth:`close`)."""

    def send(self, node_id: str, blobs: list[bytes]) -> None:
        """Send ``blobs`` to agent ``node_id``, in order, without waiting on it."""

    async def join(self, spec: AgentSpec, deadline: float) -> Announcement | None:
        """Connect to a replica found while the run goes on (raises ``ConnectError``)."""

    async def drop(self, node_id: str) -> None:
        """Close a replica's connection that came as the run ended (it is not part of it)."""

    def carry(self, node_id: str) -> None:
        """Carry a joined replica's frames to the wire :meth:`serve` was given."""

    def let_go(self, node_id: str) -> None:
        """Stop trying to reach lost agent ``node_id``."""

    def lost_why(self, node_id: str) -> str | None:
        """Why agent ``node_id``'s connection is down (None: it is not)."""

    async def close(self) -> None:
        """The run is over: stop reaching agents and close every connection."""

    def layers(self) -> WireLayers | None:
        """The wire below the packet, where the transport counts it (None: only frames are counted)."""
