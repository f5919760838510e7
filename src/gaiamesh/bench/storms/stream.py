"""A fail-storm during a stream (``gaiamesh stream --storm-every S``): while the items flow, every
``every`` seconds ``kill`` worker agents get SIGKILL, and each comes back ``down`` seconds later
under the same node id, as ``bench-failstorm`` does to a batch of runs (its storm loop, reused).

The coordinator is never killed: it holds the stream (the queue and every item's fate), as
ProtocolBench's coordinator does, and a stream whose coordinator dies is over. An item a killed
worker held is handed on by the relay's sub-task ledger to a live worker, and the coordinator
records the move (``items.jsonl``: a send ``lost``, then the answering one). What the storm did
goes in ``stream.json`` under ``storm``: its settings and each kill with its time and restart.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from pathlib import Path

from ...deploy.local import ProcessGroup, RelayWatch, reap
from ...evaluation.streams import StormKill, StormReport
from ...mesh.frames import PacketType
from ...settings import Settings
from ...stream.team import ANSWERER, COORDINATOR
from .failstorm import Kill, LocalTeam, Storm, storm_loop


class Workers(LocalTeam):
    """The stream's agents a storm may kill: its workers, never the coordinator."""

    def alive(self) -> list[str]:
        return [n for n in super().alive() if self.specs[n].tool == ANSWERER]


FLOW_POLL_S = 0.2  # how often the frame log is read for the first item sent


def items_flow(frames: Path) -> bool:
    """Whether the relay's frame log (``frames.jsonl``) holds a sub-task yet: an item on its way
    to a worker."""
    try:
        lines = frames.read_bytes().splitlines()
    except FileNotFoundError:
        return False
    for line in lines:
        try:
            if json.loads(line).get("type") == PacketType.SUBTASK:
                return True
        except ValueError:
            continue  # a line the relay is still writing
    return False


class StreamStorm(RelayWatch):
    """The storm of one stream, handed to ``run_local`` as its ``watch``: it blows from the first
    item sent (``frames``: the run's frame log) until the relay exits, then :meth:`report` says
    what it did."""

    def __init__(self, storm: Storm, down: float, frames: Path) -> None:
        self.storm, self.down, self.frames = storm, down, frames
        self.kills: list[Kill] = []

    def __call__(self, group: ProcessGroup, settings: Settings, relay: subprocess.Popen[bytes]) -> None:
        with self.measured(group):
            asyncio.run(self._blow(Workers(group, settings, self.down), relay))

    async def _blow(self, team: Workers, relay: subprocess.Popen[bytes]) -> None:
        tools = {node: spec.tool for node, spec in team.specs.items() if spec.tool != COORDINATOR}
        async with asyncio.TaskGroup() as group:
            blowing = group.create_task(self._once_items_flow(team, tools))
            self.relay_cpu_s = await asyncio.to_thread(reap, relay)  # the run is over when the relay exits
            blowing.cancel()  # a restart still waiting is not made: the team is stopped next

    async def _once_items_flow(self, team: Workers, tools: dict[str, str]) -> None:
        # The storm's clock starts with the first item sent: the team's start-up (many seconds on
        # a busy machine) is no part of the stream, and a kill before any item moves takes none
        # down (a storm of three kills 3 s apart once ended before the first item was sent).
        await self._first_item()
        await storm_loop(team, tools, self.kills, self.storm, time.monotonic())

    async def _first_item(self) -> None:
        """Returns once the frame log holds a sub-task. Polled: the log is the relay's file (another
        process's), and nothing signals that it grew."""
        while True:
            if items_flow(self.frames):
                return
            await asyncio.sleep(FLOW_POLL_S)

    def report(self) -> StormReport:
        s = self.storm
        return StormReport(
            kill=s.kill, every_s=s.every, down_s=self.down, seed=s.seed, limit=s.limit,
            kills=[StormKill(t=round(k.t, 3), node=k.node,
                             restarted=None if k.restarted is None else round(k.restarted, 3)) for k in self.kills],
        )  # fmt: skip
