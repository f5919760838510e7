"""``gaiamesh tasks import``: task folders from the formats the field publishes its sets in.

- ``squad``: SQuAD 1.1/2.0 JSON (``data[].paragraphs[].qas[]``); each question on its paragraph,
  with every gold answer; SQuAD 2.0's unanswerable questions are skipped.
- ``hotpotqa``: HotpotQA's distractor setting (a JSON list); the ten paragraphs, titled, are the
  document, the answer the gold.
- ``gaia``: GAIA's ``metadata.jsonl``; a task whose attachment (``file_name``, beside the
  metadata) is text becomes a task on that text; tasks with no attachment or a binary one are
  skipped, and the report says so.
- ``jsonl``: one ``{"id", "doc", "question", "answer"}`` (or ``"answers": [...]``) per line.

Each task becomes ``OUT_DIR/<id>/doc.txt`` and ``ground_truth.json`` (``answer`` plus
``answers`` when there are several), which :func:`gaiamesh.tasks.load_task` reads back.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .folder import Task, TaskError, load_task

FORMATS = ("squad", "hotpotqa", "gaia", "jsonl")
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class Record:
    """One task as a dataset gives it."""

    task_id: str
    doc: str
    question: str
    answers: tuple[str, ...]


@dataclass
class Report:
    """What an import wrote and what it skipped, with why."""

    written: list[Path] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)


Skip = Callable[[str], None]


def _load_json(path: Path, fmt: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TaskError(f"{fmt}: cannot read {path} as JSON: {exc}") from exc


def _lines(path: Path, fmt: str) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(f"{fmt}: cannot read {path}: {exc}") from exc
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TaskError(f"{fmt}: {path} line {n} is not JSON: {exc}") from exc
        if not isinstance(row, dict):
            raise TaskError(f"{fmt}: {path} line {n} is not a JSON object")
        yield n, row


def _answers(values: list[Any]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(str(v).strip() for v in values if str(v).strip()))


def read_squad(path: Path, skip: Skip) -> Iterator[Record]:
    data = _load_json(path, "squad")
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise TaskError(f"squad: {path} has no 'data' list of articles (is it SQuAD JSON?)")
    for article in data["data"]:
        for paragraph in article.get("paragraphs", []):
            context = paragraph.get("context", "")
            for qa in paragraph.get("qas", []):
                answers = _answers([a.get("text", "") for a in qa.get("answers", [])])
                if qa.get("is_impossible") or not answers:
                    skip("unanswerable (SQuAD 2.0)")
                    continue
                yield Record(str(qa.get("id", "")), context, str(qa.get("question", "")), answers)


def read_hotpotqa(path: Path, skip: Skip) -> Iterator[Record]:
    data = _load_json(path, "hotpotqa")
    if not isinstance(data, list):
        raise TaskError(f"hotpotqa: {path} is not a JSON list of questions (is it HotpotQA's distractor file?)")
    for n, item in enumerate(data):
        context = item.get("context") if isinstance(item, dict) else None
        if not isinstance(context, list) or "question" not in item or "answer" not in item:
            raise TaskError(f"hotpotqa: {path} item {n} lacks 'question', 'answer' or a 'context' list")
        # Each paragraph is [title, [sentences]]; sentences carry their own leading spaces.
        doc = "\n\n".join(f"{title}\n{''.join(sentences).strip()}" for title, sentences in context)
        yield Record(str(item.get("_id", n)), doc, str(item["question"]), _answers([item["answer"]]))


def read_gaia(path: Path, skip: Skip) -> Iterator[Record]:
    for n, row in _lines(path, "gaia"):
        if "Question" not in row or "Final answer" not in row:
            raise TaskError(f"gaia: {path} line {n} lacks 'Question' or 'Final answer'")
        name = str(row.get("file_name") or "")
        if not name:
            skip("no attachment (GAIA needs a document)")
            continue
        attachment = path.parent / name
        if attachment.resolve().parent != path.parent.resolve():
            skip("attachment outside the metadata's folder")
            continue
        try:
            doc = attachment.read_text(encoding="utf-8")
        except FileNotFoundError:
            skip("attachment missing")
            continue
        except UnicodeDecodeError:
            skip("attachment is not text")
            continue
        yield Record(str(row.get("task_id", n)), doc, str(row["Question"]), _answers([row["Final answer"]]))


def read_jsonl(path: Path, skip: Skip) -> Iterator[Record]:
    for n, row in _lines(path, "jsonl"):
        given = row.get("answers", [row["answer"]] if "answer" in row else [])
        answers = _answers(given if isinstance(given, list) else [given])
        if not all(isinstance(row.get(k), str) and row[k].strip() for k in ("doc", "question")) or not answers:
            raise TaskError(f"jsonl: {path} line {n} needs 'doc', 'question' and 'answer' (or 'answers')")
        yield Record(str(row.get("id", n)), row["doc"], row["question"], answers)


READERS: dict[str, Callable[[Path, Skip], Iterator[Record]]] = {
    "squad": read_squad, "hotpotqa": read_hotpotqa, "gaia": read_gaia, "jsonl": read_jsonl,
}  # fmt: skip


def import_tasks(fmt: str, source: Path, out: Path, limit: int = 0) -> Report:
    """Write one task folder per usable record of ``source`` under ``out``; raises
    :class:`TaskError` (saying where and why) for a file that is not in that format."""
    if fmt not in READERS:
        raise TaskError(f"unknown format {fmt!r}; available: {', '.join(FORMATS)}")
    if not source.is_file():
        raise TaskError(f"{fmt}: {source} is not a file")
    report = Report()
    used: set[str] = {p.name for p in out.iterdir()} if out.is_dir() else set()
    # The whole file is read and checked first: a broken one writes nothing.
    records = list(READERS[fmt](source, lambda why: report.skipped.update([why])))
    for record in records:
        if not record.doc.strip() or not record.question.strip():
            report.skipped["empty document or question"] += 1
            continue
        name = _SAFE.sub("-", record.task_id).strip("-.")[:80] or "task"
        stem, k = name, 1
        while name in used:
            k += 1
            name = f"{stem}-{k}"
        used.add(name)
        folder = out / name
        folder.mkdir(parents=True)
        (folder / "doc.txt").write_text(record.doc, encoding="utf-8")
        truth: dict[str, Any] = {"question": record.question.strip(), "answer": record.answers[0]}
        if len(record.answers) > 1:
            truth["answers"] = list(record.answers)
        (folder / "ground_truth.json").write_text(json.dumps(truth, indent=2, ensure_ascii=False), encoding="utf-8")
        report.written.append(folder)
        if limit and len(report.written) >= limit:
            break
    return report


def tasks_from_jsonl(path: Path) -> list[Task]:
    """``bench --tasks FILE.jsonl``: the file's tasks, imported into a folder of their own."""
    folder = Path(tempfile.mkdtemp(prefix=f"gaiamesh-{path.stem}-"))
    report = import_tasks("jsonl", path, folder)
    return [load_task(p) for p in report.written]
