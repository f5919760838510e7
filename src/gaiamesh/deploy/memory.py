"""Memory: what a stream's local team takes, what the container it runs in may take, and whether
a stream of so many workers fits before it starts.

A stream's team runs as child processes of the service (``service/streams.py``), in the service's
own container in compose: every worker is a Python process with the mesh, its protocol and its
model client loaded. Their memory is counted as the kernel charges it to the container: each
process's proportional set size (PSS: private pages whole, shared pages split among the
processes that map them), read from ``/proc/PID/smaps_rollup``. The parsing and the decision are
pure; the readers take their paths as arguments, so that tests hand them files.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

MIB = 1024 * 1024
# Measured (docs/stream.md, "Memory"): a replayed json stream's team, its relay and the stream
# command, peak PSS at 1, 4 and 16 workers. Each worker a new interpreter (AGENT_START=exec):
# 427, 738 and 1,992 MiB, 104 MiB more per worker. Forked from one zygote (fork, the default):
# 298, 350 and 535 MiB, 16 MiB more per worker, the rest shared with the zygote; reckoned at 30,
# since a worker that runs longer writes more of those pages, which then become its own.
STREAM_BASE_MIB = 330
STREAM_WORKER_MIB = {"fork": 30, "exec": 105}
HEADROOM = 0.85  # of the container's limit, the most a stream may bring its memory to
CGROUP = Path("/sys/fs/cgroup")
NO_LIMIT = 1 << 60  # cgroup v1's "unlimited" is a page-rounded 2**63 - 1; anything above this is none


def pss_kib(smaps_rollup: str) -> int:
    """A process's PSS in KiB, from the text of its ``/proc/PID/smaps_rollup`` (0: none said)."""
    for line in smaps_rollup.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1])
    return 0


def team_pss_mib(pids: Iterable[int], proc: Path = Path("/proc")) -> float:
    """The PSS of ``pids`` together, in MiB; a process gone meanwhile counts 0."""
    total = 0
    for pid in pids:
        try:
            total += pss_kib((proc / str(pid) / "smaps_rollup").read_text())
        except (OSError, ValueError):
            continue
    return total / 1024


def cgroup_memory(root: Path = CGROUP) -> tuple[int | None, int | None]:
    """This process's cgroup memory limit and use, in bytes (cgroup v2, else v1); None where no
    limit is set or the file is not there (not in a container, or no memory controller). The use
    leaves out inactive file pages, which the kernel takes back before it kills anything (as
    ``docker stats`` counts it)."""
    for limit_file, used_file, stat_file, inactive in (
        ("memory.max", "memory.current", "memory.stat", "inactive_file"),
        ("memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes", "memory/memory.stat", "total_inactive_file"),
    ):
        if not (root / limit_file).is_file():
            continue
        limit, used = _number(root / limit_file), _number(root / used_file)
        if used is not None:
            used = max(0, used - _stat(root / stat_file, inactive))
        return (limit if limit is not None and limit < NO_LIMIT else None), used
    return None, None


def _number(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # v2 writes "max" for no limit


def _stat(path: Path, key: str) -> int:
    """One counter of a cgroup's ``memory.stat`` (0 when it is not there)."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return 0
    for line in lines:
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return 0


@dataclass(frozen=True)
class Room:
    """Whether a stream of ``workers`` fits: what it needs, what is there, and how many fit."""

    workers: int
    need_mib: float
    limit_mib: float | None
    used_mib: float | None
    worker_mib: float = STREAM_WORKER_MIB["fork"]

    @property
    def most_workers(self) -> int | None:
        """The most workers a stream may have now (None: no limit known)."""
        if self.limit_mib is None:
            return None
        free = self.limit_mib * HEADROOM - (self.used_mib or 0) - STREAM_BASE_MIB
        return max(0, math.floor(free / self.worker_mib))

    @property
    def fits(self) -> bool:
        most = self.most_workers
        return most is None or self.workers <= most

    def refusal(self) -> str:
        """Why a stream that does not fit is refused, with the figures."""
        return (f"a stream of {self.workers} workers needs about {self.need_mib:.0f} MiB ({STREAM_BASE_MIB} MiB, and "
                f"{self.worker_mib:.0f} MiB per worker: docs/stream.md); this container may use {self.limit_mib:.0f} MiB "
                f"and {self.used_mib or 0:.0f} MiB are in use, so at most {self.most_workers} workers fit now "
                f"(within {HEADROOM:.0%} of the limit). Ask for fewer workers, or raise the network container's "
                "memory (NETWORK_MEMORY in .env; STREAM_MEMORY_MIB outside a container)")  # fmt: skip


def room_for(workers: int, limit_mib: int = 0, root: Path = CGROUP, agent_start: str = "fork") -> Room:
    """What a stream of ``workers`` local workers, started as AGENT_START says, needs against
    this container's memory now (its cgroup's limit, less what is in use); against
    ``limit_mib`` alone (STREAM_MEMORY_MIB: what a stream's team may take) when that is not 0."""
    per = STREAM_WORKER_MIB[agent_start]
    need = STREAM_BASE_MIB + per * workers
    if limit_mib:
        return Room(workers, need, float(limit_mib), None, per)
    limit, used = cgroup_memory(root)
    return Room(workers, need, None if limit is None else limit / MIB, None if used is None else used / MIB, per)


class PeakMemory:
    """The peak PSS of a set of processes (``pids()``, asked again at each sample: a team's
    processes come and go), sampled every ``every`` seconds in a thread while a block runs."""

    def __init__(self, pids: Callable[[], Iterable[int]], every: float = 0.5) -> None:
        self.pids = pids
        self.every = every
        self.peak_mib = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="peak-memory", daemon=True)

    def _run(self) -> None:
        while True:
            self.peak_mib = max(self.peak_mib, team_pss_mib(self.pids()))
            if self._stop.wait(self.every):  # the stop signal, not a sleep: the sampler's own pace
                return

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
