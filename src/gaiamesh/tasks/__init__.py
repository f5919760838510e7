"""Tasks: a folder with ``doc.txt`` and ``ground_truth.json`` (:mod:`.folder`), the formats the
field publishes its sets in turned into such folders (:mod:`.importers`), and the sets a
benchmark runs over (:func:`discover_tasks`)."""

from __future__ import annotations

from pathlib import Path

from .folder import Task, TaskError, Turn, bundled_names, load_task
from .importers import tasks_from_jsonl

__all__ = ["Task", "TaskError", "Turn", "bundled_names", "discover_tasks", "load_task"]


def discover_tasks(root: str | Path) -> list[Task]:
    """Every task folder directly under ``root`` (sorted), ``root`` itself if it is one, or the
    tasks of a ``.jsonl`` file (``{"id", "doc", "question", "answer"}`` per line)."""
    base = Path(root)
    if base.is_file() and base.suffix == ".jsonl":
        return tasks_from_jsonl(base)
    if (base / "ground_truth.json").exists():
        return [load_task(base)]
    folders = sorted(p for p in base.iterdir() if p.is_dir()) if base.is_dir() else []
    if not folders:
        raise TaskError(f"no task folders under {base}")
    return [load_task(p) for p in folders]
