"""What else the machine was doing during each run of a bench: the load average, the CPU that
processes outside the bench used, the CPU the hypervisor stole, and the engine's containers
that are not the bench's.

``cpu_other`` is the measure that decides: the machine's busy CPU time over the run (from
``/proc/stat``) minus that of the bench's own processes (every process descended from its
roots: the bench itself, the agents and model server it started, a compose stack's
containers), in cores. The parsing is pure (tested by plain calls); :class:`LoadProbe` reads
``/proc`` and asks docker.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

# A run during which processes outside the bench kept at least this much CPU busy, on average,
# overlapped other load: its time says as much about them as about what it measured.
CONTENDED_CORES = 0.25
# /proc counts CPU in ticks of 10 ms: over a run shorter than this (a replayed run takes tens of
# ms) a tick more or less is most of the measure, so such a run is not called contended.
MIN_WINDOW_S = 1.0
PROC = Path("/proc")


@dataclass(frozen=True)
class CpuTimes:
    busy: int  # ticks spent on anything but idle, iowait and steal
    steal: int
    total: int


def cpu_times(stat: str) -> CpuTimes:
    """The machine's CPU ticks from ``/proc/stat``'s first line."""
    fields = [int(v) for v in stat.splitlines()[0].split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = fields + [0] * (8 - len(fields))
    return CpuTimes(user + nice + system + irq + softirq, steal, sum(fields))


def proc_stat(text: str) -> tuple[int, int]:
    """``(parent pid, ticks)`` from a ``/proc/<pid>/stat`` line: its user and system time and
    that of its children it has waited for (an ended child's time moves to its parent)."""
    rest = text[text.rindex(")") + 2 :].split()  # the command may hold spaces and parentheses
    return int(rest[1]), sum(int(v) for v in rest[11:15])


def tree_ticks(procs: Mapping[int, tuple[int, int]], roots: Iterable[int]) -> int:
    """The CPU ticks of ``roots`` and every process descended from them."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    seen, todo = set(), [r for r in roots if r in procs]
    while todo:
        pid = todo.pop()
        if pid not in seen:
            seen.add(pid)
            todo.extend(children.get(pid, []))
    return sum(procs[p][1] for p in seen)


def _procs() -> dict[int, tuple[int, int]]:
    found = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            try:
                found[int(entry.name)] = proc_stat((entry / "stat").read_text())
            except (OSError, ValueError, IndexError):
                continue  # it ended while we looked
    return found


def running_containers(exclude_project: str | None = None) -> int | None:
    """The engine's running containers, but those of compose project ``exclude_project``; None
    when docker cannot say."""
    if shutil.which("docker") is None:
        return None
    try:
        proc = subprocess.run(["docker", "ps", "--format", "{{json .Labels}}"], capture_output=True, text=True,
                              timeout=10)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    labels = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    mine = f"com.docker.compose.project={exclude_project}"
    return sum(1 for text in labels if not (exclude_project and mine in text.split(",")))


@dataclass(frozen=True)
class Load:
    """The machine during one run."""

    load_1m: float  # the 1-minute load average as the run ended
    cpu_other: float  # cores kept busy by processes outside the bench, mean over the run
    steal_pct: float  # % of the machine's CPU time the hypervisor stole during the run
    containers: int | None  # running containers of the engine that are not the bench's
    seconds: float = MIN_WINDOW_S  # how long the run lasted

    @property
    def contended(self) -> bool:
        return self.seconds >= MIN_WINDOW_S and self.cpu_other >= CONTENDED_CORES

    def row(self) -> dict[str, object]:
        # cpu_other left empty where the run was too short for it to mean anything
        return {"load_1m": self.load_1m, "cpu_other": self.cpu_other if self.seconds >= MIN_WINDOW_S else "",
                "steal_pct": self.steal_pct, "containers": "" if self.containers is None else self.containers,
                "contended": self.contended}  # fmt: skip


class LoadProbe:
    """``start()`` before a run, ``stop()`` after it: the :class:`Load` in between. ``roots``
    gives the bench's own processes (asked at both ends: a restarted agent is a new pid)."""

    def __init__(self, roots: Callable[[], Iterable[int]], project: str | None = None) -> None:
        self.roots = roots
        self.project = project
        self.hz = os.sysconf("SC_CLK_TCK")
        self._start: tuple[float, CpuTimes, int] | None = None

    def _sample(self) -> tuple[float, CpuTimes, int]:
        return time.monotonic(), cpu_times((PROC / "stat").read_text()), tree_ticks(_procs(), self.roots())

    def start(self) -> None:
        self._start = self._sample()

    def stop(self) -> Load:
        assert self._start is not None, "stop() before start()"
        (t0, cpu0, ours0), (t1, cpu1, ours1) = self._start, self._sample()
        seconds = max(t1 - t0, 1e-3)
        other = max(0, (cpu1.busy - cpu0.busy) - (ours1 - ours0)) / self.hz / seconds
        total = max(1, cpu1.total - cpu0.total)
        return Load(
            load_1m=float((PROC / "loadavg").read_text().split()[0]),
            cpu_other=round(other, 3),
            steal_pct=round(100 * (cpu1.steal - cpu0.steal) / total, 2),
            containers=running_containers(self.project),
            seconds=round(seconds, 3),
        )
