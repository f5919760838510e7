import json
from pathlib import Path

import pytest

from gaiamesh.tasks import TaskError, discover_tasks, load_task

ROOT = Path(__file__).resolve().parents[3]


def make(tmp_path: Path, doc: str | None = "A doc.", truth: object = None) -> Path:
    folder = tmp_path / "t"
    folder.mkdir()
    if doc is not None:
        (folder / "doc.txt").write_text(doc)
    if truth is not None:
        (folder / "ground_truth.json").write_text(truth if isinstance(truth, str) else json.dumps(truth))
    return folder


def test_bundled_tasks_all_load() -> None:
    tasks = discover_tasks(ROOT / "tasks")
    assert len(tasks) >= 8
    for t in tasks:
        assert t.answer in t.doc or t.task_id in {"polar-expedition", "rowing-club", "mountain-observatory"}


@pytest.mark.parametrize(
    ("doc", "truth", "message"),
    [
        (None, {"question": "q", "answer": "a"}, "missing doc.txt"),
        ("doc", None, "missing ground_truth.json"),
        ("doc", "{oops", "not valid JSON"),
        ("doc", ["q", "a"], "must be an object"),
        ("doc", {"question": "q", "answer": ["a"]}, "'answer' must be text or a number"),
        ("doc", {"answer": "a"}, "non-empty 'question'"),
        ("   ", {"question": "q", "answer": "a"}, "doc.txt is empty"),
    ],
)
def test_bad_task_folders_get_precise_errors(
    tmp_path: Path, doc: str | None, truth: object, message: str
) -> None:
    with pytest.raises(TaskError, match=message):
        load_task(make(tmp_path, doc, truth))


def test_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match="does not exist"):
        load_task(tmp_path / "nope")


@pytest.mark.parametrize("truth", [{"question": "q"}, {"question": "q", "answer": "  "}, {"question": "q", "answers": []}])
def test_a_question_without_gold_answer_is_a_task_whose_runs_are_not_scored(tmp_path: Path, truth: object) -> None:
    task = load_task(make(tmp_path, "doc", truth))
    assert (task.question, task.answer, task.golds) == ("q", "", ())


def test_numeric_answer_is_text(tmp_path: Path) -> None:
    assert load_task(make(tmp_path, "doc", {"question": "q", "answer": 42})).answer == "42"


def test_several_gold_answers(tmp_path: Path) -> None:
    only_list = load_task(make(tmp_path, "doc", {"question": "q", "answers": ["Leith", "Leith, Scotland"]}))
    assert (only_list.answer, only_list.golds) == ("Leith", ("Leith", "Leith, Scotland"))
    for sub in "bcd":
        (tmp_path / sub).mkdir()
    both = load_task(make(tmp_path / "b", "doc", {"question": "q", "answer": "a", "answers": ["a", 3]}))
    assert both.golds == ("a", "3")
    single = load_task(make(tmp_path / "c", "doc", {"question": "q", "answer": "a"}))
    assert single.answers == () and single.golds == ("a",)
    with pytest.raises(TaskError, match="'answers' must be a list of non-empty answers"):
        load_task(make(tmp_path / "d", "doc", {"question": "q", "answers": "a"}))
