"""Task-set files: many tasks, each line with its manifest, read as task folders."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gaiamesh.tasks import TaskError, discover_tasks
from gaiamesh.tasks.sets import expand, export, read_entries, read_set

ROOT = Path(__file__).resolve().parents[3]


def line(**kw: object) -> str:
    base = {"id": "t1", "set": "one", "written": "2026-01-02", "origin": "invented for a test",
            "question": "How tall is the mast?", "answer": "41 metres", "doc": "The mast is 41 metres tall."}  # fmt: skip
    return json.dumps({**base, **kw})


@pytest.fixture
def two_sets(tmp_path: Path) -> Path:
    path = tmp_path / "dev.jsonl"
    rows = [line(), line(id="t2", answers=["1901", "in 1901"], answer=None, question="When?"),
            line(id="t1", set="two", answer=7, paraphrase_of="one/t1")]  # fmt: skip
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_a_set_file_reads_as_tasks_with_their_gold_answers(two_sets: Path) -> None:
    tasks = discover_tasks(two_sets)
    assert [(t.task_id, t.golds) for t in tasks] == [("t1", ("41 metres",)), ("t2", ("1901", "in 1901")), ("t1", ("7",))]
    assert all((t.path / "doc.txt").read_text() == "The mast is 41 metres tall." for t in tasks)
    assert [t.path.parent.name for t in tasks] == ["one", "one", "two"]  # the same id in two sets is two tasks


def test_one_set_of_a_file_and_a_report_row_per_set(two_sets: Path) -> None:
    assert [t.question for t in read_set(f"{two_sets}#one")] == ["How tall is the mast?", "When?"]
    assert expand(two_sets) == [f"{two_sets}#one", f"{two_sets}#two"]
    with pytest.raises(TaskError, match="has no set 'three'; it has one, two"):
        read_set(f"{two_sets}#three")


def test_a_bad_line_is_named_by_its_number_and_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(line() + "\n" + line(written="yesterday") + "\n", encoding="utf-8")
    with pytest.raises(TaskError, match=r"bad.jsonl line 2: written: "):
        read_entries(path)
    path.write_text(line(colour="blue") + "\n", encoding="utf-8")
    with pytest.raises(TaskError, match="line 1: colour: Extra inputs are not permitted"):
        read_entries(path)


def test_export_writes_folders_that_load_the_same_and_refuses_to_overwrite(two_sets: Path, tmp_path: Path) -> None:
    entries = read_entries(two_sets)
    folders = export(entries, tmp_path / "out")
    assert json.loads((folders[2] / "ground_truth.json").read_text()) == {
        "question": "How tall is the mast?", "answer": 7, "paraphrase_of": "one/t1"}  # fmt: skip
    with pytest.raises(TaskError, match="already exists"):
        export(entries[:1], tmp_path / "out")


def test_a_plain_jsonl_file_without_manifest_still_imports(tmp_path: Path) -> None:
    path = tmp_path / "plain.jsonl"
    path.write_text(json.dumps({"id": "a", "doc": "Ada was born in 1815.", "question": "Born?", "answer": "1815"}) + "\n")
    assert [t.answer for t in discover_tasks(path)] == ["1815"]


def test_the_development_sets_are_whole() -> None:
    counts = {p.name: len(read_entries(p)) for p in sorted((ROOT / "tasks-dev").glob("*.jsonl"))}
    assert sum(counts.values()) == 1003 and len(counts) == 6


def test_the_tasks_command_lists_and_exports(two_sets: Path, tmp_path: Path) -> None:
    listed = subprocess.run([sys.executable, "-m", "gaiamesh", "tasks", "list", str(two_sets)],
                            capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert "invented for a test" in listed and "2026-01-02" in listed
    out = subprocess.run([sys.executable, "-m", "gaiamesh", "tasks", "export", f"{two_sets}#two", str(tmp_path / "x")],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert "wrote 1 task folders" in out and (tmp_path / "x" / "two" / "t1" / "doc.txt").is_file()
    bad = subprocess.run([sys.executable, "-m", "gaiamesh", "tasks", "list", f"{two_sets}#nine"], capture_output=True, text=True)
    assert bad.returncode == 2 and "has no set 'nine'" in bad.stdout + bad.stderr
