"""Task folders: ``doc.txt`` plus ``ground_truth.json`` = ``{"question": ..., "answer": ...}``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .frames import Turn


class TaskError(ValueError):
    """A task folder that cannot be run, with the exact reason."""


@dataclass(frozen=True)
class Task:
    task_id: str
    doc: str
    question: str
    answer: str
    path: Path
    history: tuple[Turn, ...] = ()  # earlier turns of a conversation (the memory window)


def load_task(path: str | Path, label: str | None = None) -> Task:
    """Load and check a task folder; raises :class:`TaskError` before anything starts.

    ``label`` (a path) names the task when ``path`` is a mount point such as ``/task``.
    """
    folder = Path(path)
    task_id = Path(label.rstrip("/")).name if label else folder.name
    if not folder.is_dir():
        raise TaskError(f"task folder {folder} does not exist or is not a directory")
    doc_path, truth_path = folder / "doc.txt", folder / "ground_truth.json"
    for needed in (doc_path, truth_path):
        if not needed.is_file():
            raise TaskError(f"task {folder}: missing {needed.name}")
    try:
        doc = doc_path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise TaskError(f"task {folder}: doc.txt is not UTF-8 ({exc.reason})") from exc
    if not doc.strip():
        raise TaskError(f"task {folder}: doc.txt is empty")
    try:
        truth = json.loads(truth_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TaskError(f"task {folder}: ground_truth.json is not valid JSON ({exc})") from exc
    if not isinstance(truth, dict):
        raise TaskError(f"task {folder}: ground_truth.json must be an object with question and answer")
    for key in ("question", "answer"):
        value = truth.get(key)
        if not isinstance(value, str | int | float) or isinstance(value, bool) or not str(value).strip():
            raise TaskError(f"task {folder}: ground_truth.json needs a non-empty {key!r}")
    return Task(task_id, doc, str(truth["question"]).strip(), str(truth["answer"]).strip(), folder)


def discover_tasks(root: str | Path) -> list[Task]:
    """Every task folder directly under ``root`` (sorted), or ``root`` itself if it is one."""
    base = Path(root)
    if (base / "ground_truth.json").exists():
        return [load_task(base)]
    folders = sorted(p for p in base.iterdir() if p.is_dir()) if base.is_dir() else []
    if not folders:
        raise TaskError(f"no task folders under {base}")
    return [load_task(p) for p in folders]
