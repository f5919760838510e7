"""``gaiamesh bench-compose`` (what ``make bench`` runs): the protocol comparison on a running
compose stack, through its network service's API, as ``gaiamesh submit`` runs a task.

Two ways, both chosen by ``scripts/bench-compose.sh``, which brings the stack up and down:

- record + replay (the default): ``--record-only`` runs each task once under ``json`` on the
  live model and keeps the runs in ``OUT/records/<task>/``; the script recreates the agents
  with ``LLM_BACKEND=replay`` and ``REPLAY_FROM`` at that folder, and the comparison runs again
  with ``--replayed-from``: the model's answers are the records', so only the wire differs.
- live (``LIVE=1``): every protocol's run asks the model itself.

The comparison itself runs as the local bench's does: a warm-up run that is not counted, then
every protocol of a task back to back in a seeded shuffled order (``schedule.py``), each run
with the machine's load beside it (``bench/load.py``: the bench's own processes are this process and
every process of the project's containers). Each run's ``metrics.json`` and archive land in
``OUT/bench-runs/<protocol>/<task>-<repeat>/`` (what ``gaiamesh report`` reads), and
``results.csv``, ``summary.md`` and ``comparison.png`` in ``OUT``.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import ConfigError, GaiameshError, RunStatus
from ...evaluation.finish import write_metrics
from ...evaluation.metrics import RunMetrics
from ...service.client import save_artifacts, submit
from ...service.models import RunRequest
from ..load import PROC, LoadProbe, proc_stat
from . import schedule
from .run import csv_row, write_reports

RECORDED_WITH = "json"  # the protocol the records are made under (the agents ask the model the same under any)


@dataclass(frozen=True)
class Stack:
    """The compose stack the bench runs on: its network service and its project name."""

    url: str
    key: str
    project: str


@dataclass(frozen=True)
class Outcome:
    """One run: its metrics (None when the service gave none) and what went wrong, if anything."""

    metrics: RunMetrics | None
    problem: str = ""


def stack_roots(project: str) -> list[int]:
    """The bench's processes on the stack's side: for each running container of ``project``,
    the containerd shim that holds its init process, so that a process exec'd into the container
    counts as the stack's too (the init process itself where its parent cannot be read)."""
    try:
        ids = subprocess.run(["docker", "ps", "-q", "--filter", f"label=com.docker.compose.project={project}"],
                             capture_output=True, text=True, timeout=10).stdout.split()  # fmt: skip
        if not ids:
            return []
        pids = subprocess.run(["docker", "inspect", "-f", "{{.State.Pid}}", *ids], capture_output=True, text=True,
                              timeout=10).stdout.split()  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return []
    roots = []
    for pid in (int(p) for p in pids if p.isdigit() and p != "0"):
        try:
            roots.append(proc_stat((PROC / str(pid) / "stat").read_text())[0])
        except (OSError, ValueError, IndexError):
            roots.append(pid)
    return roots


def run_one(stack: Stack, task: str, protocol: str, folder: Path) -> Outcome:
    """Run ``task`` under ``protocol`` on the stack; its progress goes to ``folder/run.log``, its
    ``metrics.json`` and ``run_artifacts.tar.gz`` into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "run.log").open("w", encoding="utf-8") as log:
        try:
            run, metrics = submit(stack.url, stack.key, RunRequest(task=task, protocol=protocol),
                                  progress=lambda line: print(line, file=log, flush=True))  # fmt: skip
            if metrics is None:
                return Outcome(None, f"run {run.id} ended {run.state.value} without metrics: {run.error}")
            save_artifacts(stack.url, stack.key, run.id, folder)
        except GaiameshError as exc:
            print(exc, file=log)
            return Outcome(None, str(exc))
    write_metrics(metrics, folder)
    return Outcome(metrics, "" if metrics.status == RunStatus.OK else f"ended {metrics.status}: {metrics.error or ''}".strip())


class Progress:
    """One line per run, with the time spent and an estimate of the time left."""

    def __init__(self, total: int) -> None:
        self.total, self.done, self.start = total, 0, time.monotonic()

    def line(self, protocol: str, task: str, repeat: int, outcome: Outcome, folder: Path) -> None:
        self.done += 1
        spent = time.monotonic() - self.start
        left = spent * (self.total - self.done) / self.done
        said = "ok" if not outcome.problem else f"FAILED: {outcome.problem[:160]} (see {folder / 'run.log'})"
        print(f"[{self.done:3d}/{self.total}] {protocol:<10} {task:<24} #{repeat} {said} · "
              f"{_clock(spent)} elapsed, about {_clock(left)} left", flush=True)  # fmt: skip


def _clock(seconds: float) -> str:
    return f"{int(seconds) // 60}:{int(seconds) % 60:02d}"


def record(stack: Stack, tasks: list[str], out: Path) -> int:
    """Each task once under :data:`RECORDED_WITH` on the live model, into ``out/records/<task>/``;
    the number of tasks whose record failed (a replay of a failed run would not be that run)."""
    progress, failed = Progress(len(tasks)), 0
    for task in tasks:
        folder = out / "records" / task
        outcome = run_one(stack, task, RECORDED_WITH, folder)
        failed += bool(outcome.problem)
        progress.line(RECORDED_WITH, task, 1, outcome, folder)
    return failed


@dataclass(frozen=True)
class Matrix:
    """What the comparison runs: tasks, protocols, repeats and the order's seed."""

    tasks: list[str]
    protocols: list[str]
    repeat: int
    seed: int


def compare(stack: Stack, matrix: Matrix, out: Path, how: str) -> tuple[list[dict[str, Any]], int]:
    """A warm-up run (not counted), then every protocol of each task back to back in a seeded
    shuffled order, each with the machine's load; writes the reports with ``how`` (how the model
    was reached) in the summary. Returns the rows and the number of failed runs."""
    slots = schedule.interleaved(matrix.tasks, matrix.protocols, matrix.repeat, matrix.seed)
    probe = LoadProbe(lambda: [os.getpid(), *stack_roots(stack.project)], project=stack.project)
    first = slots[0]
    warm = run_one(stack, first.task, first.variant, out / "warm-up" / f"{first.variant}-{first.task}")
    print(f"warm-up (not counted): {first.variant} {first.task} {warm.problem or 'ok'}", flush=True)
    rows: list[dict[str, Any]] = []
    progress, failed = Progress(len(slots)), 0
    for slot in slots:
        folder = out / "bench-runs" / slot.variant / f"{slot.task}-{slot.repeat}"
        probe.start()
        outcome = run_one(stack, slot.task, slot.variant, folder)
        load = probe.stop()
        failed += bool(outcome.problem)
        if outcome.metrics is not None:
            rows.append(csv_row(slot.repeat, outcome.metrics) | load.row() | {"order": slot.order})
        progress.line(slot.variant, slot.task, slot.repeat, outcome, folder)
    if rows:
        write_reports(rows, out, matrix.seed, how)
    return rows, failed


def how_replayed(records: Path, pace: str) -> str:
    """The summary's words for a record + replay bench."""
    return (f"How the model was reached: **record + replay**. Each task ran once on the live model under "
            f"`{RECORDED_WITH}` (its records: `{records}`), and every protocol's runs here replayed those "
            f"records (LLM_BACKEND=replay, REPLAY_PACE={pace}): the model's answers are the same under every "
            "protocol, so only the wire differs. `LIVE=1 make bench` runs the model live under each protocol.\n\n")  # fmt: skip


LIVE = ("How the model was reached: **live**: every protocol's run asked the model itself (`LIVE=1`); "
        "its answers and times may differ between protocols.\n\n")  # fmt: skip


def check_records(records: Path, tasks: list[str]) -> None:
    """Every task of the comparison has a record to replay."""
    missing = [t for t in tasks if not (records / t / "run_artifacts.tar.gz").is_file()]
    if missing:
        raise ConfigError(f"no record to replay under {records} for {', '.join(missing)} "
                          "(make bench records them first; LIVE=1 runs live)")  # fmt: skip
