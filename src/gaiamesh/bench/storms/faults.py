"""``gaiamesh bench-faults``: a batch of tasks calm, then under each network fault, per protocol.

The faults are the relay's own (``FAULT_*``, :mod:`gaiamesh.mesh.faults`): latency with jitter on
every link, loss of the relay's copies (redelivered), a partition of one agent, one slow agent.
The relay runs in this process; the agents run once per protocol and serve every fault setting
(the faults live in the relay, so the agents and their model calls stay as they are).
With ``--replay FROM`` every model call is answered from an earlier bench's records: the model is
held fixed and only the network differs.

:func:`summarize` is the pure part (tested by plain calls): per protocol and fault, the quality
kept against the calm runs, the time added (run by run against the same task calm), the frames
redelivered and lost, and the runs that did not end ``ok``.
"""

from __future__ import annotations

import asyncio
import json
import statistics
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ...agents.teams import agent_specs, default_agents, lineup, team_specs
from ...deploy.local import ProcessGroup, model_server, own_team, web_server
from ...errors import ConfigError, RunStatus
from ...evaluation.audit import audit
from ...evaluation.finish import run_and_finish
from ...evaluation.metrics import RunMetrics, read_log
from ...mesh.faults import FaultPlan
from ...mesh.protocols import generate_keys
from ...mesh.relay import MeshNetwork
from ...settings import FaultSettings, Settings
from ...tasks import Task
from .. import plots
from ..compare.run import agents_running

console = Console()
CALM = "calm"
# What a fault setting sets; every run starts from none of them (a FAULT_* in .env does not leak
# into the calm runs). FAULT_LINKS, the redelivery wait and the seed are the user's to set.
FAULTS = ("fault_latency_ms", "fault_jitter_ms", "fault_loss", "fault_partition_agent", "fault_partition_at",
          "fault_partition_for", "fault_slow_agent", "fault_slow_ms")  # fmt: skip


def grid(
    latency_ms: float = 50, jitter_ms: float = 20, loss: float = 0.05, partition_agent: str = "1",
    partition_at: float = 0.0, partition_for: float = 10.0, slow_agent: str = "2", slow_ms: float = 500,
) -> dict[str, dict[str, Any]]:  # fmt: skip
    """The default fault settings by name: the ``FAULT_*`` fields each sets (calm: none)."""
    return {
        CALM: {},
        "latency": {"fault_latency_ms": latency_ms, "fault_jitter_ms": jitter_ms},
        "loss": {"fault_loss": loss},
        "partition": {"fault_partition_agent": partition_agent, "fault_partition_at": partition_at,
                      "fault_partition_for": partition_for},  # fmt: skip
        "slow": {"fault_slow_agent": slow_agent, "fault_slow_ms": slow_ms},
    }


def describe(fault: dict[str, Any]) -> str:
    """One fault setting in words, for the tables."""
    if not fault:
        return "no faults"
    if "fault_latency_ms" in fault:
        return f"{fault['fault_latency_ms']:g} ± {fault['fault_jitter_ms']:g} ms on every link, each way"
    if "fault_loss" in fault:
        return f"{100 * fault['fault_loss']:g} % of the relay's copies lost (redelivered)"
    if "fault_partition_agent" in fault:
        return (f"agent {fault['fault_partition_agent']} cut off from {fault['fault_partition_at']:g} s "
                f"for {fault['fault_partition_for']:g} s")  # fmt: skip
    return f"agent {fault['fault_slow_agent']} +{fault['fault_slow_ms']:g} ms each way"


@dataclass
class FaultRun:
    """One run, as the bench reads it from its metrics and its frame log."""

    protocol: str
    fault: str
    task_id: str
    status: str
    prediction: str
    quality_score: float | None
    exact_match: int | None
    # the run's whole time, its connections' setup included: on a protocol's own wire a fault can
    # hold the first request (an agent card, a DID document) before the first frame is logged
    wall_ms: float
    redelivered: int  # frames the relay sent again (lost on the way, or an agent's work handed on)
    dropped: int  # copies the network lost
    faulted: int  # frames the network delayed, held or lost (a fault note in the log)
    audit_ok: bool
    out: str


def read_run(protocol: str, fault: str, metrics: RunMetrics, run_dir: Path) -> FaultRun:
    records = read_log(run_dir / "frames.jsonl")
    return FaultRun(
        protocol, fault, metrics.task_id, metrics.status, metrics.prediction, metrics.quality_score,
        metrics.exact_match, metrics.wall_ms, sum(r.status == "redelivered" for r in records),
        sum(r.status == "dropped_fault" for r in records), sum(r.fault is not None for r in records),
        all(a == b for _, a, b in audit(run_dir)), str(run_dir),
    )  # fmt: skip


def _mean(values: list[float]) -> float | None:
    return round(statistics.fmean(values), 4) if values else None


def summarize(runs: list[FaultRun]) -> list[dict[str, Any]]:
    """One row per protocol and fault: quality kept and time added against the same tasks calm."""
    rows = []
    for protocol in dict.fromkeys(r.protocol for r in runs):
        calm = {r.task_id: r for r in runs if r.protocol == protocol and r.fault == CALM}
        calm_q = _mean([r.quality_score for r in calm.values() if r.quality_score is not None])
        for fault in dict.fromkeys(r.fault for r in runs if r.protocol == protocol):
            group = [r for r in runs if r.protocol == protocol and r.fault == fault]
            quality = _mean([r.quality_score for r in group if r.quality_score is not None])
            added = [r.wall_ms - calm[r.task_id].wall_ms for r in group if r.task_id in calm]
            rows.append({
                "protocol": protocol, "fault": fault, "runs": len(group),
                "quality": quality,
                "retained": round(quality / calm_q, 4) if quality is not None and calm_q else None,
                "same_answer": sum(r.task_id in calm and r.prediction == calm[r.task_id].prediction for r in group),
                "time_added_ms": round(statistics.median(added), 1) if added else None,
                # a fault that strikes few runs (loss) shows in the mean, not in the median
                "time_added_mean_ms": round(statistics.fmean(added), 1) if added else None,
                "wall_ms": round(statistics.median(r.wall_ms for r in group), 1),
                "redelivered": sum(r.redelivered for r in group),
                "dropped": sum(r.dropped for r in group),
                "faulted_frames": sum(r.faulted for r in group),
                "not_ok": {r.task_id: r.status for r in group if r.status != RunStatus.OK},
                "audits_ok": all(r.audit_ok for r in group),
            })  # fmt: skip
    return rows


COLUMNS = [
    ("protocol", "protocol"), ("fault", "fault"), ("runs", "runs"), ("quality", "quality"),
    ("retained", "quality retained"), ("same_answer", "same answer as calm"), ("time_added_ms", "time added ms (median)"),
    ("time_added_mean_ms", "time added ms (mean)"),
    ("redelivered", "frames redelivered"), ("dropped", "copies lost"), ("faulted_frames", "frames delayed/held/lost"),
    ("not_ok", "runs not ok"), ("audits_ok", "audit"),
]  # fmt: skip


def cell(key: str, value: Any) -> str:
    if key == "not_ok":
        return ", ".join(f"{t}: {s}" for t, s in value.items()) or "none"
    if key == "audits_ok":
        return "agrees" if value else "DISAGREES"
    return "–" if value is None else str(value)


def markdown(result: dict[str, Any]) -> str:
    c = result["config"]
    lines = [
        "# gaiamesh bench-faults", "",
        f"{len(c['tasks'])} task(s) × protocols {', '.join(c['protocols'])}: each calm, then under each network "
        f"fault (FAULT_SEED={c['seed']}); model: {c['backend']}. Time added: run by run (its whole time, "
        "connections included) against the same task calm (median). Frames redelivered: copies the network lost that the relay sent again.", "",
        *(f"- **{name}**: {text}" for name, text in c["faults"].items()), "",
        "| " + " | ".join(h for _, h in COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
        *("| " + " | ".join(cell(k, row[k]) for k, _ in COLUMNS) + " |" for row in result["summary"]),
    ]  # fmt: skip
    return "\n".join(lines) + "\n"


def write_results(result: dict[str, Any], out: Path) -> None:
    """``faults.json``, ``faults.md`` (the table) and ``faults.png`` in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "faults.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / "faults.md").write_text(markdown(result))
    plot(result["summary"], out / "faults.png")


def plot(summary: list[dict[str, Any]], path: Path) -> None:
    """Two panels per fault, a bar per protocol: quality retained, and seconds added."""
    plt = plots.pyplot()

    faults = [f for f in dict.fromkeys(r["fault"] for r in summary) if f != CALM]
    protocols = list(dict.fromkeys(r["protocol"] for r in summary))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    width = 0.8 / max(1, len(protocols))
    for i, protocol in enumerate(protocols):
        got = {r["fault"]: r for r in summary if r["protocol"] == protocol}
        xs = [j + i * width for j in range(len(faults))]
        axes[0].bar(xs, [got[f]["retained"] or 0 for f in faults], width, label=protocol)
        axes[1].bar(xs, [(got[f]["time_added_ms"] or 0) / 1000 for f in faults], width, label=protocol)
    for ax, title in zip(axes, ("quality retained (vs calm)", "time added, s (median, vs the same task calm)"),
                         strict=True):  # fmt: skip
        ax.set_xticks([j + width * (len(protocols) - 1) / 2 for j in range(len(faults))], faults)
        ax.set_title(title)
        ax.legend(loc="lower right" if ax is axes[0] else "best")
    axes[0].set_ylim(0, 1.1)
    fig.suptitle("Gaia Mesh under network faults")
    fig.tight_layout()
    plots.save(fig, path)


def checked(settings: Settings, faults: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each fault setting as the run's settings take it (every other fault off), validated: a
    value out of range or an agent the team lacks is a :class:`ConfigError` before anything runs."""
    off = {k: FaultSettings.model_fields[k].default for k in FAULTS}
    team = settings.model_copy(update={"agents": default_agents(strategy=settings.strategy)})
    nodes = [s.node_id for s in team_specs(team)]
    mine = settings.model_dump(include=set(FaultSettings.model_fields))
    full = {}
    for name, fault in faults.items():
        try:
            valid = FaultSettings.model_validate({**mine, **off, **fault})
        except ValidationError as exc:
            error = exc.errors()[0]
            raise ConfigError(f"fault {name!r}: {error['loc'][0]} {error['msg']}") from exc
        FaultPlan.from_settings(valid, nodes)
        full[name] = {**off, **fault}
    return full


def _for_protocol(settings: Settings, protocol: str, out: Path, base_port: int) -> Settings:
    s = own_team(settings.model_copy(update={"protocol": protocol}), base_port)
    if protocol == "signed":
        nodes = ["network", *(a.node_id for a in agent_specs(s))]
        s = s.model_copy(update={"keys_dir": generate_keys(out / "keys", nodes)})
    return s


def run_faults(
    settings: Settings, tasks: list[Task], protocols: list[str], faults: dict[str, dict[str, Any]], out: Path,
    base_port: int,
) -> dict[str, Any]:  # fmt: skip
    """Run every task calm and under each fault, per protocol (model server unless replaying,
    agents as processes, relay in-process; one warm-up run per protocol, not counted); write and
    return what ``faults.json`` holds. ``faults`` must hold ``calm``."""
    runs: list[FaultRun] = []
    full = checked(settings, faults)
    group = ProcessGroup(out / "logs")
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    try:
        with model_server(settings, group), Progress(*columns, console=console) as progress:
            bar = progress.add_task("faults", total=len(protocols) * len(faults) * len(tasks))
            for protocol in protocols:
                base = _for_protocol(settings, protocol, out, base_port)
                with web_server(base, group), agents_running(base, group, protocol):
                    # one untimed run first: the calm runs would otherwise pay for cold agents and
                    # a cold model server, and every fault would seem to cost less than it does
                    progress.update(bar, description=f"{protocol:<10} warm-up")
                    warm = base.model_copy(update=full[CALM])
                    asyncio.run(run_and_finish(MeshNetwork(warm, tasks[0], out / "warm-up" / protocol, quiet=True, lineup=lineup(warm))))
                    for name, fault in full.items():
                        run_settings = base.model_copy(update=fault)
                        for task in tasks:
                            progress.update(bar, description=f"{protocol:<10} {name:<10} {task.task_id:<22}")
                            run_dir = out / "runs" / protocol / name / task.task_id
                            metrics = asyncio.run(run_and_finish(MeshNetwork(run_settings, task, run_dir, quiet=True, lineup=lineup(run_settings))))
                            runs.append(read_run(protocol, name, metrics, run_dir))
                            progress.advance(bar)
    finally:
        group.stop_all()
    result = {
        "config": {
            "tasks": [t.task_id for t in tasks], "protocols": protocols, "seed": settings.fault_seed,
            "backend": settings.llm_backend + (f" from {settings.replay_from}" if settings.replay_from else ""),
            "strategy": settings.strategy, "faults": {n: describe(f) for n, f in faults.items()},
            "settings": faults,
        },
        "summary": summarize(runs),
        "runs": [asdict(r) for r in runs],
    }  # fmt: skip
    write_results(result, out)
    return result
