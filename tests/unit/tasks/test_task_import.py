"""``gaiamesh tasks import``: a small file in each public format, written here, becomes task
folders that load; what cannot be a task is skipped and counted; a broken file is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gaiamesh.cli import main
from gaiamesh.tasks import TaskError, discover_tasks, load_task
from gaiamesh.tasks.importers import import_tasks

SQUAD = {
    "version": "v2.0",
    "data": [{"title": "Lighthouse", "paragraphs": [{
        "context": "The Marlow lighthouse was first lit in 1871. Its lens came from Paris.",
        "qas": [
            {"id": "q1", "question": "When was the lighthouse first lit?", "is_impossible": False,
             "answers": [{"text": "1871", "answer_start": 39}, {"text": "in 1871", "answer_start": 36},
                         {"text": "1871", "answer_start": 39}]},
            {"id": "q2", "question": "Who painted the lighthouse?", "is_impossible": True, "answers": [],
             "plausible_answers": [{"text": "Paris", "answer_start": 63}]},
        ],
    }]}],
}  # fmt: skip
HOTPOT = [{
    "_id": "5a8b57f25542995d1e6f1371", "type": "bridge", "level": "hard",
    "question": "In which city was the architect of the Marlow lighthouse born?", "answer": "Leith",
    "supporting_facts": [["Marlow lighthouse", 0], ["Ann Brodie", 1]],
    "context": [["Marlow lighthouse", ["The Marlow lighthouse was designed by Ann Brodie.", " It was lit in 1871."]],
                ["Ann Brodie", ["Ann Brodie was an engineer.", " She was born in Leith."]]],
}]  # fmt: skip


def test_squad_questions_on_their_paragraph_with_every_gold_and_unanswerables_skipped(tmp_path: Path) -> None:
    src = tmp_path / "dev-v2.0.json"
    src.write_text(json.dumps(SQUAD))
    report = import_tasks("squad", src, tmp_path / "out")
    assert [p.name for p in report.written] == ["q1"] and report.skipped == {"unanswerable (SQuAD 2.0)": 1}
    task = load_task(report.written[0])
    assert task.doc.startswith("The Marlow lighthouse") and task.question == "When was the lighthouse first lit?"
    assert task.answer == "1871" and task.golds == ("1871", "in 1871")


def test_hotpotqa_paragraphs_titled_are_the_document(tmp_path: Path) -> None:
    src = tmp_path / "hotpot_dev_distractor_v1.json"
    src.write_text(json.dumps(HOTPOT))
    task = load_task(import_tasks("hotpotqa", src, tmp_path / "out").written[0])
    assert task.doc == ("Marlow lighthouse\nThe Marlow lighthouse was designed by Ann Brodie. It was lit in 1871.\n\n"
                        "Ann Brodie\nAnn Brodie was an engineer. She was born in Leith.")  # fmt: skip
    assert task.answer == "Leith" and task.task_id == "5a8b57f25542995d1e6f1371"


def test_gaia_metadata_with_text_attachments_only(tmp_path: Path) -> None:
    folder = tmp_path / "gaia" / "validation"
    folder.mkdir(parents=True)
    (folder / "notes.txt").write_text("The depot opened in 1902 with 14 trams.")
    (folder / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    rows = [
        {"task_id": "t-1", "Question": "How many trams did the depot open with?", "Level": 1, "Final answer": "14",
         "file_name": "notes.txt"},
        {"task_id": "t-2", "Question": "What is in the photo?", "Level": 1, "Final answer": "a cat",
         "file_name": "photo.png"},
        {"task_id": "t-3", "Question": "What is 2+2?", "Level": 1, "Final answer": "4", "file_name": ""},
        {"task_id": "t-4", "Question": "Read the key", "Level": 1, "Final answer": "x", "file_name": "../secret.txt"},
    ]  # fmt: skip
    (tmp_path / "gaia" / "secret.txt").write_text("outside")
    src = folder / "metadata.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    report = import_tasks("gaia", src, tmp_path / "out")
    assert [p.name for p in report.written] == ["t-1"]
    assert report.skipped == {"attachment is not text": 1, "no attachment (GAIA needs a document)": 1,
                              "attachment outside the metadata's folder": 1}  # fmt: skip
    task = load_task(report.written[0])
    assert (task.doc, task.answer) == ("The depot opened in 1902 with 14 trams.", "14")


def test_plain_jsonl_and_bench_takes_it_directly(tmp_path: Path) -> None:
    src = tmp_path / "mine.jsonl"
    rows = [{"id": "a/1", "doc": "The ferry carries 40 cars.", "question": "How many cars?", "answer": "40"},
            {"id": "a/1", "doc": "Rain fell.", "question": "What fell?", "answers": ["rain", "Rain"]}]  # fmt: skip
    src.write_text("\n".join(json.dumps(r) for r in rows))
    report = import_tasks("jsonl", src, tmp_path / "out")
    assert [p.name for p in report.written] == ["a-1", "a-1-2"]  # safe, unique folder names
    assert [t.golds for t in discover_tasks(src)] == [("40",), ("rain", "Rain")]


@pytest.mark.parametrize(
    ("fmt", "content", "message"),
    [
        ("squad", "{oops", "squad: cannot read .* as JSON"),
        ("squad", '{"version": "x"}', "has no 'data' list of articles"),
        ("hotpotqa", '{"data": []}', "is not a JSON list of questions"),
        ("hotpotqa", '[{"question": "q"}]', "item 0 lacks 'question', 'answer' or a 'context' list"),
        ("jsonl", '{"doc": "d", "question": "q", "answer": "a"}\nnot json', "line 2 is not JSON"),
        ("jsonl", '{"doc": "d", "question": "q"}', "line 1 needs 'doc', 'question' and 'answer'"),
        ("gaia", '{"Question": "q"}', "line 1 lacks 'Question' or 'Final answer'"),
    ],
)
def test_a_broken_file_is_refused_with_where_and_why(tmp_path: Path, fmt: str, content: str, message: str) -> None:
    src = tmp_path / "data.txt"
    src.write_text(content)
    with pytest.raises(TaskError, match=message):
        import_tasks(fmt, src, tmp_path / "out")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "dev.json"
    src.write_text(json.dumps(SQUAD))
    assert main(["tasks", "import", "--format", "squad", str(src), str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "q1" / "ground_truth.json").is_file()
    assert main(["tasks", "import", "--format", "squad", str(tmp_path / "nope.json"), str(tmp_path / "x")]) == 2
