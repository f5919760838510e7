"""Task-set files: many tasks in one JSONL file, each line a task with its manifest.

A line is ``{"id", "set", "written", "origin", "question", "answer" | "answers", "doc"}`` plus
optional ``paraphrase_of`` (the task whose question it rewords): ``set`` names the group it was
written in, ``written`` the day, ``origin`` who wrote it and what was done with it since. A run
needs a task folder (the network process reads ``TASK``), so reading a set writes each task as a
folder under a scratch directory and loads it with :func:`~.folder.load_task`: the checks are
the same as for any task. ``FILE.jsonl#SET`` takes one set of a file.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from datetime import date
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from .folder import Task, TaskError, load_task

MANIFEST = ("id", "set", "written", "origin")


class SetEntry(BaseModel):
    """One line of a task-set file."""

    model_config = ConfigDict(extra="forbid")

    id: str
    set: str
    written: date
    origin: str
    question: str
    doc: str
    answer: str | int | float | None = None
    answers: list[str | int | float] = []
    paraphrase_of: str | None = None

    def truth(self) -> dict[str, object]:
        """The task's ``ground_truth.json``: everything but the manifest and the document."""
        return self.model_dump(exclude={*MANIFEST, "doc"}, exclude_none=True, exclude_defaults=True)


def split_ref(ref: str | Path) -> tuple[Path, str | None]:
    """``"FILE.jsonl#SET"`` -> ``(FILE.jsonl, SET)``; no ``#``: every set."""
    path, _, only = str(ref).partition("#")
    return Path(path), only or None


def is_set_file(path: Path) -> bool:
    """Whether ``path`` is a task-set file (its first line carries a manifest)."""
    with path.open(encoding="utf-8") as f:
        first = f.readline()
    try:
        row = json.loads(first)
    except json.JSONDecodeError:
        return False
    return isinstance(row, dict) and all(k in row for k in MANIFEST)


def read_entries(path: Path, only: str | None = None) -> list[SetEntry]:
    """The file's lines, checked; only those of set ``only`` when given (an unknown set is an
    error naming the file's sets)."""
    if not path.is_file():
        raise TaskError(f"task-set file {path} does not exist")
    entries: list[SetEntry] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            entries.append(SetEntry.model_validate_json(line))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "line"
            raise TaskError(f"{path} line {n}: {where}: {first['msg']}") from exc
    if only is None:
        return entries
    chosen = [e for e in entries if e.set == only]
    if not chosen:
        raise TaskError(f"{path} has no set {only!r}; it has {', '.join(sorted(census(entries)))}")
    return chosen


def expand(ref: str | Path) -> list[str]:
    """A task-set file named without ``#SET`` as one reference per set (``FILE#SET``); any
    other reference as it is. Reports that list sets (``gaiamesh plans``) read one row per set."""
    path, only = split_ref(ref)
    if only or path.suffix != ".jsonl" or not path.is_file() or not is_set_file(path):
        return [str(ref)]
    return [f"{path}#{name}" for name in census(read_entries(path))]


def census(entries: list[SetEntry]) -> Counter[str]:
    """Tasks per set, in the file's order."""
    return Counter(e.set for e in entries)


def export(entries: list[SetEntry], out: Path) -> list[Path]:
    """Write each entry as a task folder ``out/SET/ID``; returns the folders."""
    folders = []
    for entry in entries:
        folder = out / entry.set / entry.id
        if folder.exists():
            raise TaskError(f"{folder} already exists: task ids must be unique within a set")
        folder.mkdir(parents=True)
        (folder / "doc.txt").write_text(entry.doc, encoding="utf-8")
        truth = json.dumps(entry.truth(), indent=2, ensure_ascii=False)
        (folder / "ground_truth.json").write_text(truth + "\n", encoding="utf-8")
        folders.append(folder)
    return folders


def read_set(ref: str | Path) -> list[Task]:
    """The tasks of ``FILE.jsonl`` or ``FILE.jsonl#SET``, as folders in a scratch directory."""
    path, only = split_ref(ref)
    entries = read_entries(path, only)
    scratch = Path(tempfile.mkdtemp(prefix=f"gaiamesh-{path.stem}-"))
    return [load_task(folder) for folder in export(entries, scratch)]
