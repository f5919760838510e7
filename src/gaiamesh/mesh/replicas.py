"""Replicas of AGENTS' ``dns:`` entries found or gone while a run goes on (``DISCOVERY_INTERVAL``).

The relay looks the names up again every interval: a replica that appeared is connected through
the run's transport and joins the run with a reader of its own; a lost one whose address left
DNS is let go (:func:`~gaiamesh.mesh.discovery.reconcile` decides, the core counts).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Protocol

from ..errors import ConnectError
from ..settings import AgentSpec, Settings
from . import discovery
from .core import RelayCore
from .discovery import Resolver
from .frames import Announcement
from .outcome import Outcome
from .transports import Transport
from .transports.websocket import REJOIN_ATTEMPT_S


class Network(Protocol):
    """What the replicas need of the relay (``relay.MeshNetwork``)."""

    settings: Settings
    specs: list[AgentSpec]
    transport: Transport
    heard: dict[str, Announcement]
    resolve: Resolver
    quiet: bool
    closing: bool
    report: Callable[[str], None]

    def apply(self, outcome: Outcome) -> None: ...
    def show_team(self) -> None: ...
    def down(self) -> set[str]: ...


class Replicas:
    """The replicas found or let go during one run."""

    def __init__(self, net: Network) -> None:
        self.net = net
        self.left: dict[str, str] = {}  # replicas let go (address gone from DNS) -> why
        self.joining: dict[str, asyncio.Task[None]] = {}  # replicas found by DNS, being connected
        self.refused: set[str] = set()  # replicas found by DNS that would not join (said once)
        self.looking: asyncio.Task[None] | None = None

    def watch(self, core: RelayCore, entries: list[AgentSpec], tasks: asyncio.TaskGroup) -> None:
        """Start looking the ``dns:`` ``entries`` up again until the run ends."""
        self.looking = tasks.create_task(self._rediscover(core, entries, tasks), name="discovery")

    def stop(self) -> None:
        """The run is over: no look-up or new replica after the end."""
        for task in [self.looking, *self.joining.values()]:
            if task is not None:
                task.cancel()

    async def _rediscover(self, core: RelayCore, entries: list[AgentSpec], tasks: asyncio.TaskGroup) -> None:
        """Look the ``dns:`` names up again until the run ends (:meth:`stop` cancels this):
        new replicas are connected and join the run, lost ones whose address left are let go."""
        net = self.net
        while core.end is None:
            # Polling: DNS gives no signal when a replica registers or leaves.
            await asyncio.sleep(net.settings.discovery_interval)
            addresses = await discovery.resolve_all(entries, net.resolve)
            if core.end is not None or net.closing:
                return
            active = {s.node_id for s in net.specs if s.node_id not in self.left} | set(self.joining)
            change = discovery.reconcile(entries, addresses, {s.node_id: s for s in net.specs}, active, net.down())
            for node_id in change.left:
                self._let_go(core, node_id)
            for spec in change.joined:
                self.joining[spec.node_id] = tasks.create_task(self._join(core, spec), name=f"join-{spec.node_id}")

    async def _join(self, core: RelayCore, spec: AgentSpec) -> None:
        """Connect to a replica DNS just gave, and add it to the run with a reader of its own."""
        net = self.net
        try:
            said = await net.transport.join(spec, time.monotonic() + REJOIN_ATTEMPT_S)
        except ConnectError as exc:
            if spec.node_id not in self.refused and not net.quiet:
                net.report(f"relay: replica {spec.node_id} found by DNS did not join (tried again while "
                           f"its address is in DNS): {exc}")  # fmt: skip
            self.refused.add(spec.node_id)
            return  # the next look-up tries again
        finally:
            self.joining.pop(spec.node_id, None)
        if net.closing or core.end is not None:
            await net.transport.drop(spec.node_id)  # connected as the run ended: not part of it
            return
        self.left.pop(spec.node_id, None)
        if all(s.node_id != spec.node_id for s in net.specs):
            net.specs.append(spec)
        net.heard.update({spec.node_id: said} if said else {})
        consumes, reads = (said.consumes, said.reads) if said else (None, frozenset[str]())
        net.apply(core.join(spec.node_id, spec.tool, time.monotonic(), consumes, reads, spec.announces))
        net.transport.carry(spec.node_id)
        net.show_team()

    def _let_go(self, core: RelayCore, node_id: str) -> None:
        """A lost replica's address left DNS: stop trying to reach it (the transport is reaching it
        again) and tell the core, which waits for it no more."""
        self.net.transport.let_go(node_id)
        reason = "its address left DNS while its connection was down"
        self.left[node_id] = f"let go: {reason}"
        self.net.apply(core.leave(node_id, reason, time.monotonic()))
        self.net.show_team()
