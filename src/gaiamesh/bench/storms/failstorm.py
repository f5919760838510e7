"""``gaiamesh bench-failstorm``: agents killed and restarted while a batch runs, and what it cost.

Eight agents (two per tool, work shared) answer a batch of tasks twice: once calm, once in a
storm where every ``every`` seconds ``kill`` agents get SIGKILL and each comes back ``down``
seconds later. The relay runs in this process, so every frame, every lost and every returning
agent is seen with its time.

:func:`analyse` is the pure part (tested by plain calls): from the kills, the restarts, the
frames and the team changes it measures, per kill, the time to detect (the relay reports the
agent lost), until the relay can route that tool again (it knows the agent is gone and a live
agent of the tool is registered: a surviving replica at once, else the first to come back), to
the next packet for that tool delivered to a live agent (which waits on the pipeline's pace), and
until the restarted agent carries traffic again; and over the batch the quality kept (retention), the
runs that did not end ``ok``, and the frames lost: accepted frames whose consumer died holding
them and that were never redelivered.
"""

from __future__ import annotations

import asyncio
import random
import signal
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from rich.console import Console
from rich.progress import Progress

from ...agents.catalog import subscriptions
from ...agents.teams import agent_specs, lineup, tools_of
from ...deploy.local import ProcessGroup, free_port_block, model_server
from ...errors import RunStatus
from ...evaluation.audit import audit
from ...evaluation.finish import run_and_finish
from ...evaluation.metrics import RunMetrics
from ...mesh.admission import new_token
from ...mesh.outcome import Team as RelayTeam
from ...mesh.records import FrameRecord
from ...mesh.relay import MeshNetwork
from ...mesh.routing import RoutingMode
from ...settings import Settings
from ...tasks import Task
from .report import write_results

console = Console()
TOOLS = list(tools_of("pipeline"))


@dataclass(frozen=True)
class Storm:
    """How hard the storm blows: every ``every`` s ``kill`` agents (chosen with ``seed``), at
    most ``limit`` kills in all (0: until the stormy batch ends); a run waits ``grace`` s
    (REJOIN_GRACE) when every agent of a tool is down at once."""

    kill: int
    every: float
    seed: int = 1
    grace: float = 10.0
    limit: int = 0


@dataclass
class Kill:
    t: float  # seconds since the storm began
    node: str
    tool: str
    restarted: float | None = None
    detect_s: float | None = None  # the relay reported it lost (None: it died between runs)
    # the relay can route its tool again: it knows the agent is gone and a live agent of the
    # tool is registered (a surviving replica at once, else the first to come back)
    restored_s: float | None = None
    recover_s: float | None = None  # the next packet for its tool delivered to a live agent
    back_s: float | None = None  # from its restart to the first frame it received again
    redeliver_s: float | None = None  # the work it held handed to a live replica (None: it held none)


@dataclass
class RunTrace:
    """One run as the relay saw it: frames and team changes with their times."""

    task_id: str
    phase: str  # calm | storm
    out: Path
    frames: list[tuple[float, FrameRecord]] = field(default_factory=list)
    teams: list[tuple[float, dict[str, str]]] = field(default_factory=list)
    metrics: RunMetrics | None = None


def analyse(kills: list[Kill], runs: list[RunTrace], tools: dict[str, str]) -> dict[str, Any]:
    """Per-kill times and the batch summary (pure: everything comes in as data)."""
    storm = [r for r in runs if r.phase == "storm"]
    frames = sorted(((t, rec) for r in storm for t, rec in r.frames), key=lambda x: x[0])
    teams = sorted(((t, team) for r in storm for t, team in r.teams), key=lambda x: x[0])
    for k in kills:
        # only a loss reported before its restart is this kill's (one reported later is another's)
        until = k.restarted if k.restarted is not None else float("inf")
        lost_t = next((t for t, team in teams if k.t <= t <= until and team.get(k.node) == "lost"), None)
        k.detect_s = round(lost_t - k.t, 3) if lost_t is not None else None
        if lost_t is not None:  # from the relay's own view at that moment (times unrounded)
            k.restored_s = next(
                (round(t - k.t, 3) for t, team in teams
                 if t >= lost_t and any(tools.get(n) == k.tool and state == "connected" for n, state in team.items())),
                None,
            )  # fmt: skip
        k.recover_s = next(
            (round(t - k.t, 3) for t, rec in frames
             if t >= k.t and rec.status != "rejected" and any(tools.get(d) == k.tool for d in rec.dst)),
            None,
        )  # fmt: skip
        k.redeliver_s = next(
            (round(t - k.t, 3) for t, rec in frames
             if k.t <= t <= until and rec.status == "redelivered" and k.node not in rec.dst
             and any(tools.get(d) == k.tool for d in rec.dst)),
            None,
        )  # fmt: skip
        if k.restarted is not None:
            restarted = k.restarted
            k.back_s = next(
                (round(t - restarted, 3) for t, rec in frames if t >= restarted and k.node in rec.dst), None
            )

    def quality(phase: str) -> tuple[float, float, int]:
        ms = [r.metrics for r in runs if r.phase == phase and r.metrics is not None]
        scored = [m for m in ms if m.scored]  # a task without a gold answer is left out of the means
        if not scored:
            return 0.0, 0.0, len(ms)
        q = statistics.fmean(m.quality_score or 0.0 for m in scored)
        return q, statistics.fmean(m.exact_match or 0 for m in scored), len(ms)

    calm_q, calm_em, _ = quality("calm")
    changed = answers_changed(runs)
    storm_q, storm_em, n_storm = quality("storm")

    def med(values: list[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return round(statistics.median(known), 3) if known else None

    return {
        "kills": len(kills),
        "median_detect_s": med([k.detect_s for k in kills]),
        "median_restored_s": med([k.restored_s for k in kills]),
        "max_restored_s": max((k.restored_s for k in kills if k.restored_s is not None), default=None),
        "median_recover_s": med([k.recover_s for k in kills]),
        "max_recover_s": max((k.recover_s for k in kills if k.recover_s is not None), default=None),
        "median_back_s": med([k.back_s for k in kills]),
        "median_redeliver_s": med([k.redeliver_s for k in kills]),
        "kills_holding_work": sum(k.redeliver_s is not None for k in kills),
        "calm_quality": round(calm_q, 4),
        "storm_quality": round(storm_q, 4),
        "calm_exact_match": round(calm_em, 4),
        "storm_exact_match": round(storm_em, 4),
        "retention": round(storm_q / calm_q, 4) if calm_q else None,
        "em_retention": round(storm_em / calm_em, 4) if calm_em else None,
        "storm_runs": n_storm,
        "answers_changed": changed,
        "runs_not_ok": {r.task_id: r.metrics.status for r in storm if r.metrics and r.metrics.status != RunStatus.OK},
        "frames_lost": sum(frames_lost(r, tools) for r in runs),
        # native: recovery is the protocol client's, and what it gave up on is counted at the gateway
        "frames_undelivered": sum(r.metrics.layers.undelivered for r in runs if r.metrics and r.metrics.layers),
    }


def answers_changed(runs: list[RunTrace]) -> dict[str, list[str]]:
    """Storm runs whose answer differs from the same task's calm answer, as [calm, storm]. The
    model is deterministic, so a storm may change what a run costs but never what it answers."""
    calm = {r.task_id: r.metrics.prediction for r in runs if r.phase == "calm" and r.metrics}
    return {
        r.task_id: [calm[r.task_id], r.metrics.prediction]
        for r in runs
        if r.phase == "storm" and r.metrics and r.task_id in calm and r.metrics.prediction != calm[r.task_id]
    }


def frames_lost(run: RunTrace, tools: dict[str, str]) -> int:
    """Accepted frames whose consumer was lost before it answered, and that were not redelivered
    before the run ended."""
    subs = subscriptions()
    lost_at: dict[str, list[float]] = {}
    for t, team in run.teams:
        for node, state in team.items():
            if state == "lost" and (not lost_at.get(node) or lost_at[node][-1] < t):
                lost_at.setdefault(node, []).append(t)
    lost = 0
    for i, (t, rec) in enumerate(run.frames):
        if rec.status == "rejected" or rec.type is None:
            continue
        later = run.frames[i + 1 :]
        for node in rec.dst:
            if rec.type not in subs.get(tools.get(node, ""), frozenset()):
                continue  # it only reads this type: nothing to lose
            died = next((x for x in lost_at.get(node, []) if x >= t), None)
            if died is None or any(r.src == node for tt, r in later if tt <= died):
                continue  # it answered (or never died holding it)
            if not any(r.status == "redelivered" and r.type == rec.type for tt, r in later if tt >= died):
                lost += 1
    return lost


# --- the storm, for real -------------------------------------------------------------------
RunOne = Callable[[Task, RunTrace, float], Awaitable[None]]


class Team(Protocol):
    """The agents a storm kills: eight of them, each killed for real and brought back."""

    def alive(self) -> list[str]:
        """Node ids of the agents running now."""
        ...

    def kill(self, node: str) -> None:
        """SIGKILL the agent (no goodbye: its connection just drops)."""
        ...

    async def back(self, node: str) -> float:
        """Wait until the killed agent runs again; returns when that happened (time.monotonic())."""
        ...


class LocalTeam:
    """Agent processes of a :class:`ProcessGroup`; the storm restarts a killed one after ``down`` s."""

    def __init__(self, group: ProcessGroup, settings: Settings, down: float) -> None:
        self.group, self.settings, self.down = group, settings, down
        self.specs = {s.node_id: s for s in agent_specs(settings)}

    def alive(self) -> list[str]:
        return [n.removeprefix("agent-") for n, p in self.group.procs.items() if p.poll() is None and n.startswith("agent-")]

    def kill(self, node: str) -> None:
        self.group.procs[f"agent-{node}"].send_signal(signal.SIGKILL)

    async def back(self, node: str) -> float:
        await asyncio.sleep(self.down)  # the outage the storm imposes, not a synchronization
        # A new interpreter, as a crashed agent comes back: its start-up is part of the recovery
        # measured (forked, back in 0.26 s, it took work at once and more kills hit held work).
        self.group.start_agent(self.settings.model_copy(update={"agent_start": "exec"}), self.specs[node])
        return time.monotonic()


async def _batch(run_one: RunOne, tasks: list[Task], out: Path, phase: str, clock0: float, progress: Progress) -> list[RunTrace]:
    traces = []
    bar = progress.add_task(f"{phase} runs", total=len(tasks))
    for task in tasks:
        trace = RunTrace(task.task_id, phase, out / phase / task.task_id)
        await run_one(task, trace, clock0)
        traces.append(trace)
        progress.advance(bar)
    return traces


def local_runner(settings: Settings) -> RunOne:
    """Each run through a relay in this process, which sees every frame and team change."""

    async def run_one(task: Task, trace: RunTrace, clock0: float) -> None:
        def observe(item: FrameRecord | str | RelayTeam) -> None:
            now = time.monotonic() - clock0
            if isinstance(item, tuple):
                trace.teams.append((now, {a.node_id: a.state for a in item}))
            elif not isinstance(item, str):
                trace.frames.append((now, item))

        trace.metrics = await run_and_finish(MeshNetwork(settings, task, trace.out, quiet=True, observer=observe, lineup=lineup(settings)))

    return run_one


async def storm_loop(team: Team, tools: dict[str, str], kills: list[Kill], storm: Storm, clock0: float) -> None:
    """Every ``every`` s kill ``kill`` live agents (until ``limit`` kills); each comes back as the
    team brings it back."""
    rng = random.Random(storm.seed)

    async def restart(k: Kill) -> None:
        k.restarted = await team.back(k.node) - clock0

    async with asyncio.TaskGroup() as restarts:
        while not storm.limit or len(kills) < storm.limit:
            await asyncio.sleep(storm.every)  # the storm's period
            alive = sorted(team.alive())  # asked once: on compose each ask is a `docker inspect`
            left = storm.limit - len(kills) if storm.limit else storm.kill
            for node in rng.sample(alive, min(storm.kill, left, len(alive))):
                team.kill(node)
                k = Kill(round(time.monotonic() - clock0, 3), node, tools[node])
                kills.append(k)
                restarts.create_task(restart(k))


async def failstorm(
    run_one: RunOne, team: Team, tools: dict[str, str], tasks: list[Task], out: Path, storm: Storm,
    config: dict[str, Any],
) -> dict[str, Any]:  # fmt: skip
    """The calm batch, then the same batch in the storm; returns what ``failstorm.json`` holds."""
    clock0 = time.monotonic()
    kills: list[Kill] = []
    with Progress(console=console, transient=False) as progress:
        calm = await _batch(run_one, tasks, out, "calm", clock0, progress)
        storm_start = time.monotonic() - clock0
        blowing = asyncio.create_task(storm_loop(team, tools, kills, storm, clock0))
        try:
            stormy = await _batch(run_one, tasks, out, "storm", clock0, progress)
        finally:
            blowing.cancel()
            try:
                await blowing
            except asyncio.CancelledError:
                pass
    for k in kills:
        k.t = round(k.t, 3)
        k.restarted = round(k.restarted, 3) if k.restarted is not None else None
    runs = calm + stormy
    summary = analyse(kills, runs, tools)
    audits = {f"{r.phase}/{r.task_id}": r.out.is_dir() and all(a == b for _, a, b in audit(r.out)) for r in runs}
    return {
        "config": {**config, "kill": storm.kill, "every_s": storm.every, "seed": storm.seed, "limit": storm.limit,
                   "rejoin_grace_s": storm.grace, "tasks": [t.task_id for t in tasks],
                   "storm_started_s": round(storm_start, 3)},  # fmt: skip
        "summary": summary,
        "audits_ok": all(audits.values()),
        "audits": audits,
        "kills": [asdict(k) for k in kills],
        "runs": [
            {"phase": r.phase, "task_id": r.task_id, "status": r.metrics.status if r.metrics else "none",
             "quality_score": r.metrics.quality_score if r.metrics else None,
             "exact_match": r.metrics.exact_match if r.metrics else None,
             "prediction": r.metrics.prediction if r.metrics else None,
             "ended_s": round(r.frames[-1][0], 3) if r.frames else None}
            for r in runs
        ],  # fmt: skip
    }


def run_failstorm(settings: Settings, tasks: list[Task], out: Path, storm: Storm, down: float) -> dict[str, Any]:
    """Start the model server and eight agents, run the calm and the stormy batch, write results.
    A killed agent is started again ``down`` s after its kill."""
    port = free_port_block(8)
    line = ",".join(f"{i}={t}@127.0.0.1:{port + i}" for i, t in enumerate(TOOLS * 2))
    settings = settings.model_copy(update={"agents": line, "routing": RoutingMode.SHARE, "rejoin_grace": storm.grace,
                                           "mesh_token": new_token()})  # only the agents it started  # fmt: skip
    group = ProcessGroup(out / "logs")
    try:
        with model_server(settings, group):
            group.start_team(settings)
            team = LocalTeam(group, settings, down)
            tools = {s.node_id: s.tool for s in agent_specs(settings)}
            config = {"mode": "local", "transport": settings.transport, "agents": settings.agents, "routing": settings.routing.value, "down_s": down}
            result = asyncio.run(failstorm(local_runner(settings), team, tools, tasks, out, storm, config))
    finally:
        group.stop_all()
    write_results(result, out)
    return result
