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
import subprocess
import time

from ..deploy.local import ProcessGroup, RelayWatch, reap
from ..evaluation.streams import StormKill, StormReport
from ..settings import Settings
from ..stream.team import ANSWERER, COORDINATOR
from .failstorm import Kill, LocalTeam, Storm, storm_loop


class Workers(LocalTeam):
    """The stream's agents a storm may kill: its workers, never the coordinator."""

    def alive(self) -> list[str]:
        return [n for n in super().alive() if self.specs[n].tool == ANSWERER]


class StreamStorm(RelayWatch):
    """The storm of one stream, handed to ``run_local`` as its ``watch``: it blows until the
    relay exits, then :meth:`report` says what it did."""

    def __init__(self, storm: Storm, down: float) -> None:
        self.storm, self.down = storm, down
        self.kills: list[Kill] = []

    def __call__(self, group: ProcessGroup, settings: Settings, relay: subprocess.Popen[bytes]) -> None:
        with self.measured(group):
            asyncio.run(self._blow(Workers(group, settings, self.down), relay))

    async def _blow(self, team: Workers, relay: subprocess.Popen[bytes]) -> None:
        tools = {node: spec.tool for node, spec in team.specs.items() if spec.tool != COORDINATOR}
        async with asyncio.TaskGroup() as group:
            blowing = group.create_task(storm_loop(team, tools, self.kills, self.storm, time.monotonic()))
            self.relay_cpu_s = await asyncio.to_thread(reap, relay)  # the run is over when the relay exits
            blowing.cancel()  # a restart still waiting is not made: the team is stopped next

    def report(self) -> StormReport:
        s = self.storm
        return StormReport(
            kill=s.kill, every_s=s.every, down_s=self.down, seed=s.seed, limit=s.limit,
            kills=[StormKill(t=round(k.t, 3), node=k.node,
                             restarted=None if k.restarted is None else round(k.restarted, 3)) for k in self.kills],
        )  # fmt: skip
