"""Tasks: a folder with ``doc.txt`` and ``ground_truth.json`` (:mod:`.folder`), many tasks with
their manifest in one JSONL file (:mod:`.sets`), the formats the field publishes its sets in
turned into folders (:mod:`.importers`), and the tasks a benchmark runs over (:func:`discover_tasks`)."""

from __future__ import annotations

from pathlib import Path

from .folder import Task, TaskError, Turn, bundled_names, load_task
from .importers import tasks_from_jsonl
from .sets import is_set_file, read_set, split_ref

__all__ = ["Task", "TaskError", "Turn", "bundled_names", "discover_tasks", "load_task", "read_set"]


def discover_tasks(root: str | Path) -> list[Task]:
    """Every task folder directly under ``root`` (sorted), ``root`` itself if it is one, the tasks
    of a task-set file (``FILE.jsonl`` or ``FILE.jsonl#SET``), or of a plain ``.jsonl`` file
    (``{"id", "doc", "question", "answer"}`` per line)."""
    base, only = split_ref(root)
    if base.suffix == ".jsonl" and (only or (base.is_file() and is_set_file(base))):
        return read_set(root)
    if base.is_file() and base.suffix == ".jsonl":
        return tasks_from_jsonl(base)
    if (base / "ground_truth.json").exists():
        return [load_task(base)]
    folders = sorted(p for p in base.iterdir() if p.is_dir()) if base.is_dir() else []
    if not folders:
        raise TaskError(f"no task folders under {base}")
    return [load_task(p) for p in folders]
