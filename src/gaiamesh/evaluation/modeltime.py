"""The model's time in a run, kept off the wire.

Each agent records, for every step of a run, the seq of the packet the step emitted and the
time its model calls took (``memory.json``, ``steps[].seq`` and ``steps[].llm_ms``). A run's
model time is that of the steps whose packets the relay counted: each packet that came in from
an agent and was accepted (not rejected) names its step by sender and seq. So ``llm_ms`` means
what it meant when each packet carried its own time, and a protocol's bytes no longer depend on
how long the model took. Summed in the frame log's order, so that a replay, which gives back the
recorded times, gives back the same sum to the last digit.
"""

from __future__ import annotations

import json
import tarfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..mesh.records import FrameRecord

Memory = Mapping[str, Any]
UNCOUNTED = ("rejected", "redelivered", "dropped_fault")


def step_times(memory: Memory) -> dict[int, float]:
    """An agent's model time per step, by the seq of the packet the step emitted."""
    return {int(s["seq"]): float(s.get("llm_ms", 0.0)) for s in memory.get("steps", []) if s.get("seq") is not None}


def model_time(records: Iterable[FrameRecord], memories: Mapping[str, Memory]) -> tuple[float, dict[str, float]]:
    """The run's model time and each sender's, over the packets the relay counted."""
    times = {node: step_times(m) for node, m in memories.items()}
    total, per_agent = 0.0, dict[str, float]()
    for r in records:
        if r.rx_bytes and r.seq is not None and r.status not in UNCOUNTED:
            ms = times.get(r.src, {}).get(r.seq, 0.0)
            total += ms
            per_agent[r.src] = per_agent.get(r.src, 0.0) + ms
    return total, per_agent


def memory_bytes(folders: Mapping[str, Path]) -> dict[str, bytes | None]:
    """Each agent's ``memory.json`` for the run as it is now (None: it has none yet), by the name
    the run's archive gives it (``workspaces/<node>/memory.json``); read once, so that the metrics
    and the archive hold the same memory."""
    found: dict[str, bytes | None] = {}
    for node, folder in folders.items():
        try:
            found[f"workspaces/{node}/memory.json"] = (folder / "memory.json").read_bytes()
        except OSError:
            found[f"workspaces/{node}/memory.json"] = None
    return found


def parse_memories(raw: Mapping[str, bytes | None]) -> dict[str, dict[str, Any]]:
    """:func:`memory_bytes` parsed, by node (one that is not JSON is left out: its times are unknown)."""
    found = {}
    for name, data in raw.items():
        if data is None:
            continue
        try:
            found[name.split("/")[1]] = json.loads(data.decode("utf-8"))
        except ValueError:
            continue
    return found


def read_memories(folders: Mapping[str, Path]) -> dict[str, dict[str, Any]]:
    """Each agent's ``memory.json`` for the run, from its workspace folder (an agent whose
    folder holds none is left out: its times are unknown)."""
    return parse_memories(memory_bytes(folders))


def archived_memories(archive: Path) -> dict[str, dict[str, Any]]:
    """Each agent's ``memory.json`` as ``run_artifacts.tar.gz`` holds it (``workspaces/<node>/``)."""
    found = {}
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            parts = member.name.split("/")
            if member.isfile() and len(parts) == 3 and parts[0] == "workspaces" and parts[2] == "memory.json":
                f = tar.extractfile(member)
                if f is not None:
                    found[parts[1]] = json.loads(f.read())
    return found


def run_memories(run_dir: Path) -> dict[str, dict[str, Any]]:
    """The agents' memory of a run folder: from its ``run_artifacts.tar.gz``, or, where the
    archive was unpacked there, from its ``workspaces/<node>/memory.json``."""
    archive = run_dir / "run_artifacts.tar.gz"
    if archive.is_file():
        return archived_memories(archive)
    workspaces = run_dir / "workspaces"
    return read_memories({p.name: p for p in workspaces.iterdir() if p.is_dir()} if workspaces.is_dir() else {})
