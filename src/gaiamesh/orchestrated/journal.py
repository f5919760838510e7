"""The orchestrator's records of one task: the journal, the working context and the task state.

- ``journal.jsonl``: one line per event (plans chosen or rejected, attempts, steps, replans,
  the revision limit reached, the outcome), appended as it happens.
- ``cwc.md``: the current working context (key findings and errors, over every attempt).
- ``task_state.json``: the final status, the last plan and its execution context; a saved
  state can be read back (:func:`load_state`) and its plan run again.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from .executor import Execution
from .plan import Plan


class Journal:
    """Events of one task, kept in memory and appended to ``path`` when there is one."""

    def __init__(self, path: Path | None = None, observe: Any = None) -> None:
        self.path = path
        self.entries: list[dict[str, Any]] = []
        self.observe = observe

    def add(self, event: str, **fields: Any) -> None:
        entry = {"t": round(time.time(), 3), "event": event, **fields}
        self.entries.append(entry)
        if self.path is not None:
            with self.path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(entry, ensure_ascii=False, default=str) + "\n")
        if self.observe is not None:
            self.observe(entry)

    def events(self) -> list[str]:
        return [e["event"] for e in self.entries]


@dataclass
class WorkingContext:
    """What the task has learnt so far, across attempts (the seed's CurrentWorkingContext)."""

    question: str
    key_findings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def update(self, run: Execution, attempt: int) -> None:
        self.key_findings += [f"[attempt {attempt}] {f}" for f in run.key_findings]
        self.errors += [f"[attempt {attempt}] {e}" for e in run.errors]

    def render(self) -> str:
        lines = [f"# Working context\n\nQuestion: {self.question}\n", "## Key findings"]
        lines += [f"- {f}" for f in self.key_findings] or ["- (none yet)"]
        lines += ["", "## Errors encountered"]
        lines += [f"- {e}" for e in self.errors] or ["- (none)"]
        return "\n".join(lines) + "\n"

    def explain(self) -> str:
        """Why the task failed, in words, from what it found and what went wrong."""
        found = "; ".join(self.key_findings[-3:]) or "nothing"
        return f"could not answer: {self.errors[-1] if self.errors else 'no plan'} (found: {found})"


class TaskState(BaseModel):
    """``task_state.json``: enough to see what happened and to run the last plan again."""

    model_config = ConfigDict(extra="forbid")

    question: str
    status: str  # COMPLETED | FAILED
    answer: str
    revisions: int
    plan: dict[str, Any] | None
    execution: dict[str, Any] | None


def save_state(folder: Path, state: TaskState, cwc: WorkingContext) -> None:
    (folder / "task_state.json").write_text(state.model_dump_json(indent=2), encoding="utf-8")
    (folder / "cwc.md").write_text(cwc.render(), encoding="utf-8")


def load_state(path: Path) -> tuple[TaskState, Plan | None]:
    """A saved task state and its last plan, validated again."""
    state = TaskState.model_validate_json(path.read_text(encoding="utf-8"))
    plan = Plan.model_validate(state.plan) if state.plan else None
    return state, plan
