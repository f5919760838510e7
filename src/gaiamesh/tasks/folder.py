"""Task folders: ``doc.txt`` plus ``ground_truth.json`` = ``{"question": ..., "answer": ...}``;
``"answers": [...]`` may list several gold answers (scores take the best), with or without
``"answer"`` (then the first of them). A question with no gold answer is run and not scored."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from ..errors import TaskError


class Turn(BaseModel):
    """An earlier question and its answer in the same conversation (the memory window)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    question: str
    answer: str


@dataclass(frozen=True)
class Task:
    task_id: str
    doc: str
    question: str
    answer: str
    path: Path
    history: tuple[Turn, ...] = ()  # earlier turns of a conversation (the memory window)
    answers: tuple[str, ...] = ()  # every gold answer, when there are several

    @property
    def golds(self) -> tuple[str, ...]:
        """The gold answers to score against (none: the run is not scored)."""
        return self.answers or ((self.answer,) if self.answer.strip() else ())


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
    return parse_task(task_id, doc_path.read_bytes(), truth_path.read_bytes(), f"task {folder}", folder)


def parse_task(task_id: str, doc_bytes: bytes, truth_bytes: bytes, where: str, path: Path) -> Task:
    """Check a task's ``doc.txt`` and ``ground_truth.json`` (their bytes, wherever they came from:
    a folder, or a folder packed as a tar on standard input); ``where`` begins each error."""
    try:
        doc = doc_bytes.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")  # as read_text reads it
    except UnicodeDecodeError as exc:
        raise TaskError(f"{where}: doc.txt is not UTF-8 ({exc.reason})") from exc
    if not doc.strip():
        raise TaskError(f"{where}: doc.txt is empty")
    try:
        truth = json.loads(truth_bytes.decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TaskError(f"{where}: ground_truth.json is not valid JSON ({exc})") from exc
    if not isinstance(truth, dict):
        raise TaskError(f"{where}: ground_truth.json must be an object with question and answer")
    if not _scalar(truth.get("question")):
        raise TaskError(f"{where}: ground_truth.json needs a non-empty 'question'")
    listed = truth.get("answers", [])
    if not isinstance(listed, list) or not all(_scalar(a) for a in listed):
        raise TaskError(f"{where}: ground_truth.json 'answers' must be a list of non-empty answers")
    answers = [str(a).strip() for a in ([truth["answer"]] if _scalar(truth.get("answer")) else []) + listed]
    if truth.get("answer") is not None and not isinstance(truth["answer"], str) and not answers:
        raise TaskError(f"{where}: ground_truth.json 'answer' must be text or a number")
    golds = tuple(dict.fromkeys(answers))  # none: the question is asked, and its runs are not scored
    return Task(task_id, doc, str(truth["question"]).strip(), golds[0] if golds else "", path,
                answers=golds if len(golds) > 1 else ())  # fmt: skip


def _scalar(value: object) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool) and bool(str(value).strip())


def bundled_names(root: str | Path) -> list[str]:
    """The names of the task folders directly under ``root`` (those with a document), sorted:
    what a run may name as its ``task``, what the page lists, what the offline web publishes."""
    base = Path(root)
    return sorted(p.name for p in base.iterdir() if (p / "doc.txt").is_file()) if base.is_dir() else []
