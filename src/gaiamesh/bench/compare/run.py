"""``gaiamesh bench``: every task under every strategy and protocol, repeated; a CSV, a summary
table and a plot. With more than one strategy, rows are grouped as ``strategy · protocol``."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ...agents.teams import TEAMS, agent_specs, lineup
from ...deploy.local import ProcessGroup, model_server, own_team, web_server
from ...evaluation.finish import run_and_finish
from ...evaluation.metrics import RunMetrics
from ...mesh.protocols import generate_keys
from ...mesh.relay import MeshNetwork
from ...settings import Settings
from ...tasks import Task
from ..load import LoadProbe
from . import schedule
from .baseline import run_baseline
from .report import write_reports
from .rows import BASELINE, console, csv_row


@contextmanager
def agents_running(settings: Settings, group: ProcessGroup, name: str) -> Iterator[None]:
    """Start one agent process per spec for this protocol; stop them afterwards."""
    started = group.start_team(settings, prefix=f"{name}-")
    try:
        yield
    finally:
        for label in started:
            proc = group.procs.pop(label)
            proc.terminate()
            proc.wait(timeout=10)


@dataclass(frozen=True)
class Variant:
    """What a bench compares: a strategy with some stages left out (``ablate``) under a protocol;
    ``protocol`` is :data:`BASELINE` for the single direct model call."""

    strategy: str
    ablate: str
    protocol: str
    transport: str = "relay"  # relay | native: the relay's WebSocket, or the protocol's own wire

    def name(self, strategies: int, ablations: int) -> str:
        if self.protocol == BASELINE:
            return BASELINE
        parts = [self.strategy] if strategies > 1 else []
        if ablations > 1:
            parts.append(f"no-{self.ablate.replace(',', '-')}" if self.ablate else "full")
        return "-".join([*parts, self.protocol, *(["native"] if self.transport == "native" else [])])


def _teams(settings: Settings, out: Path, base_port: int, keys: list[tuple[str, str]]) -> dict[tuple[str, str], Settings]:
    """One team per (strategy, ablate), each on its own ports with its own mesh token and keys
    for every keyed protocol: a team's agents speak every protocol (each run names its own), so
    all of them run at once and the protocols of one task run back to back."""
    teams = {}
    for strategy, ablate in keys:
        s = own_team(settings.model_copy(update={"strategy": strategy, "ablate": ablate}), base_port)
        nodes = ["network", *(a.node_id for a in agent_specs(s))]
        tag = f"{strategy}-{ablate.replace(',', '-') or 'full'}"
        teams[(strategy, ablate)] = s.model_copy(update={"keys_dir": generate_keys(out / "keys" / tag, nodes)})
        if base_port:
            base_port += len(TEAMS[strategy])
    return teams


def _one(variant: Variant, team: Settings, task: Task, run_dir: Path) -> RunMetrics:
    if variant.protocol == BASELINE:
        return asyncio.run(run_baseline(team, task, run_dir))
    team = team.model_copy(update={"protocol": variant.protocol, "transport": variant.transport})
    return asyncio.run(run_and_finish(MeshNetwork(team, task, run_dir, quiet=True, lineup=lineup(team))))


def run_bench(
    settings: Settings,
    tasks: list[Task],
    protocols: list[str],
    repeat: int,
    out: Path,
    base_port: int,
    baseline: bool,
    strategies: list[str] | None = None,
    ablations: list[str] | None = None,
    seed: int = 0,
    transports: list[str] | None = None,
    warm_up: bool = True,
) -> list[dict[str, Any]]:
    """Run the matrix locally (model server, agents as processes, relay in-process): a warm-up
    run per team first (not counted; ``warm_up=False`` leaves it out), then every variant of
    each task back to back in a seeded shuffled order (``schedule.py``), each run with the
    machine's load beside it (``bench/load.py``).
    ``ablations``: ABLATE values to compare (``""`` is the full team); ``transports``: relay,
    native (default: TRANSPORT)."""
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    strategies = strategies or [settings.strategy]
    ablations = ablations or [settings.ablate]
    keys = [(s, a) for s in strategies for a in ablations]
    transports = transports or [settings.transport]
    variants = [Variant(s, a, p, t) for s, a in keys for p in protocols for t in transports]
    if "native" in transports:  # the agents load the native protocols' SDKs before the first run
        settings = settings.model_copy(update={"native_preload": ",".join(protocols)})
    variants += [Variant(*keys[0], BASELINE)] if baseline else []  # a direct call: no team, any team's settings
    slots = schedule.interleaved(tasks, variants, repeat, seed)
    group = ProcessGroup(out / "logs")
    probe = LoadProbe(lambda: [os.getpid(), *group.pids()])
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    try:
        with model_server(settings, group), ExitStack() as running, Progress(*columns, console=console) as progress:
            teams = _teams(settings, out, base_port, keys)
            for key, team in teams.items():
                running.enter_context(web_server(team, group))
                running.enter_context(agents_running(team, group, "-".join(key).rstrip("-")))
            warming = teams if warm_up else {}  # untimed: cold processes and caches would pass for the first protocol's cost
            bar = progress.add_task("warm-up", total=len(slots) + len(warming) * len(transports))
            for key, team in warming.items():
                progress.update(bar, description=f"warm-up {'-'.join(key).rstrip('-')}")
                for transport in transports:
                    _one(Variant(*key, protocols[0], transport), team, tasks[0],
                         out / "warm-up" / "-".join([*key, transport]).replace("--", "-"))  # fmt: skip
                progress.advance(bar)
            for slot in slots:
                v = slot.variant
                name = v.name(len(strategies), len(ablations))
                progress.update(bar, description=f"{name:<14} {slot.task.task_id:<22} #{slot.repeat}")
                probe.start()
                metrics = _one(v, teams[(v.strategy, v.ablate)], slot.task, out / "runs" / name / f"{slot.task.task_id}-{slot.repeat}")
                rows.append(csv_row(slot.repeat, metrics) | probe.stop().row() | {"order": slot.order})
                progress.advance(bar)
    finally:
        group.stop_all()
    write_reports(rows, out, seed)
    return rows
