"""``gaiamesh plans``: the orchestrated plans run in-process over task folders (invented tasks)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gaiamesh.orchestrated.dryrun import dry_run, summarize
from gaiamesh.settings import load_settings
from gaiamesh.tasks import load_task

DOC = (
    "The Harrow Street chapel was built in 1842 by the Primitive Methodists. It was enlarged in 1871 "
    "and closed in 1968. Its first minister, Amos Pell, was born in 1815 and died in 1889.\n"
)


def _task(root: Path, name: str, question: str, answer: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "doc.txt").write_text(DOC, encoding="utf-8")
    (folder / "ground_truth.json").write_text(json.dumps({"question": question, "answer": answer}), encoding="utf-8")
    return folder


async def test_an_arithmetic_question_is_answered_and_scored_without_the_model(tmp_path: Path) -> None:
    folder = _task(tmp_path, "chapel-years", "How long after it was built was the chapel enlarged?", "29")
    run = await dry_run(load_task(folder), load_settings())
    assert (run.outcome, run.prediction, run.exact_match) == ("answered", "29", 1)
    assert run.plan == "template:years_after"  # read through the question's rewording


async def test_a_question_for_the_pipeline_is_reported_as_such_not_scored(tmp_path: Path) -> None:
    folder = _task(tmp_path, "chapel-builder", "Who built the Harrow Street chapel?", "the Primitive Methodists")
    run = await dry_run(load_task(folder), load_settings())
    assert (run.outcome, run.prediction, run.exact_match) == ("pipeline", "", 0)
    assert summarize({"set": [run]}) == [{"set": "set", "tasks": 1, "exact": 0, "em": 0.0, "pipeline": 1, "failed": 0}]


def test_the_command_prints_a_table_and_writes_every_outcome(tmp_path: Path) -> None:
    _task(tmp_path / "set", "chapel-years", "How many years after the chapel was built was it enlarged?", "29")
    _task(tmp_path / "set", "chapel-wrong", "How many years after the chapel was built was it closed?", "100")
    out = tmp_path / "plans.json"
    done = subprocess.run(
        [sys.executable, "-m", "gaiamesh", "plans", str(tmp_path / "set"), "--out", str(out)],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert "dry run" in done.stdout
    body = json.loads(out.read_text())
    assert body["summary"] == [{"set": str(tmp_path / "set"), "tasks": 2, "exact": 1, "em": 0.5, "pipeline": 0, "failed": 0}]
    wrong = next(t for t in body["tasks"][str(tmp_path / "set")] if t["task_id"] == "chapel-wrong")
    assert (wrong["prediction"], wrong["exact_match"]) == ("126", 0)
