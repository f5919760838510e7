"""The CPU time of another process (the bench's agent process), from ``/proc``: its threads'
schedstat in ns, or its user and system ticks where a kernel has no schedstat."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from ..load import proc_stat


def schedstat_ns(text: str) -> int:
    """The CPU time a thread has run, in ns: the first field of ``/proc/<pid>/task/<tid>/schedstat``."""
    return int(text.split()[0])


def cpu_ns(pid: int) -> int:
    """Process ``pid``'s CPU time in ns: the sum over its threads' schedstat, or (a kernel without
    schedstat) its user and system ticks."""
    tasks = Path(f"/proc/{pid}/task")
    if (tasks.parent / "schedstat").exists():
        total = 0
        for task in tasks.iterdir():
            with contextlib.suppress(OSError, ValueError, IndexError):  # a thread that just ended
                total += schedstat_ns((task / "schedstat").read_text())
        return total
    ticks = proc_stat((tasks.parent / "stat").read_text())[1]
    return ticks * 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def cpu_source(pid: int) -> str:
    if Path(f"/proc/{pid}/schedstat").exists():
        return "the agent process, from /proc/<pid>/task/*/schedstat (ns)"
    return "the agent process, from /proc/<pid>/stat (10 ms ticks: coarse per frame)"

