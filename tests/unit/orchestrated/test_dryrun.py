"""``gaiamesh plans``: the orchestrated plans run in-process over task folders (invented tasks), with
a model that chooses as told (the command itself runs with the real model in tests/e2e)."""

from __future__ import annotations

import json
from pathlib import Path

from gaiamesh.orchestrated.dryrun import dry_run, summarize
from gaiamesh.settings import load_settings
from gaiamesh.tasks import load_task

from ..fakes import Chooser

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


async def test_an_arithmetic_question_is_answered_and_scored(tmp_path: Path) -> None:
    folder = _task(tmp_path, "chapel-years", "How many years after the chapel was built was it enlarged?", "29")
    model = Chooser("1871")  # the model's choice for the second fact (the first has one candidate)
    run = await dry_run(load_task(folder), load_settings(), model)  # type: ignore[arg-type]
    assert (run.outcome, run.prediction, run.exact_match) == ("answered", "29", 1)
    assert run.plan == "template:duration" and model.offered and "1871" in model.offered[-1]


async def test_a_question_for_the_pipeline_is_reported_as_such_not_scored(tmp_path: Path) -> None:
    folder = _task(tmp_path, "chapel-builder", "Who built the Harrow Street chapel?", "the Primitive Methodists")
    run = await dry_run(load_task(folder), load_settings(), Chooser())  # type: ignore[arg-type]
    assert (run.outcome, run.prediction, run.exact_match) == ("pipeline", "", 0)
    assert summarize({"set": [run]}) == [{"set": "set", "tasks": 1, "exact": 0, "em": 0.0, "pipeline": 1, "failed": 0,
                                          "tokens": 0}]  # fmt: skip
