"""What an agent holds for one run: its sequence numbers, its memory (``memory.json``) and its
log (``agent.log``), in the run's folder of the agent's workspace."""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..mesh.frames import DocInit


@dataclass
class RunState:
    """What the agent holds for one run."""

    run_id: str
    folder: Path
    memory: dict[str, Any]
    seq: int = 0
    doc: DocInit | None = None  # the run's document, kept for tools that read it
    kept: bool = False  # whether its folder and memory.json are on disk (keep())

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def keep(self) -> None:
        """Make the run's folder and write its memory, once: at first sight of a relay's run, or
        when its tool first has work to do (a call from outside the relay leaves nothing else)."""
        if not self.kept:
            self.folder.mkdir(parents=True, exist_ok=True)
            self.save()
            self.kept = True

    def log(self, record: dict[str, Any]) -> None:
        with (self.folder / "agent.log").open("a", encoding="utf-8") as f:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")

    def save(self) -> None:
        # Whole or not at all: the relay may read it at any moment (a run that ended while this
        # agent was still working), and a half-written file would be read as no memory at all.
        tmp = self.folder / "memory.json.tmp"
        tmp.write_text(json.dumps(self.memory, indent=2, ensure_ascii=False))
        tmp.replace(self.folder / "memory.json")


def earlier_memory(folder: Path) -> dict[str, Any] | None:
    """The memory an earlier process of this agent kept for the run (it was killed and restarted
    mid-run): carried on, so that its steps, their model calls and times stay on record."""
    try:
        memory = json.loads((folder / "memory.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return memory if isinstance(memory, dict) else None


class RelayRuns:
    """The runs a relay announced to this agent in its native hello (the newest ``limit``)."""

    def __init__(self, limit: int = 256) -> None:
        self.limit = limit
        self._runs: OrderedDict[str, None] = OrderedDict()

    def admit(self, run_id: str) -> None:
        self._runs[run_id] = None
        self._runs.move_to_end(run_id)
        while len(self._runs) > self.limit:
            self._runs.popitem(last=False)

    def __contains__(self, run_id: object) -> bool:
        return run_id in self._runs
