"""A stream's items read from JSONL: bad input gets a clear error naming the line; a long file
is read lazily."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from gaiamesh.errors import TaskError
from gaiamesh.stream.items import MAX_LINE_BYTES, read_items


def write(tmp: Path, text: str) -> Path:
    path = tmp / "items.jsonl"
    path.write_text(text)
    return path


def test_items_are_read_in_order_with_numbers_for_ids_and_blank_lines_skipped(tmp_path: Path) -> None:
    path = write(tmp_path, '{"id": 7, "q": "first?", "extra": 1}\n\n{"id": "b", "q": "second?"}\n')
    assert [(i.id, i.q) for i in read_items(path)] == [("7", "first?"), ("b", "second?")]
    assert [i.id for i in read_items(path, limit=1)] == ["7"]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "no items"),
        ("\n\n", "no items"),
        ('{"id": "a", "q": "x"}\nnot json\n', "items.jsonl:2: not JSON"),
        ('[1, 2]\n', "items.jsonl:1: a JSON list, not an object"),
        ('{"id": "a"}\n', "items.jsonl:1: q: Field required"),
        ('{"id": "a", "q": ""}\n', "items.jsonl:1: q: String should have at least 1 character"),
        ('{"id": "a", "q": "x"}\n{"id": "a", "q": "y"}\n', "items.jsonl:2: id 'a' is given twice"),
        ('{"id": true, "q": "x"}\n', "items.jsonl:1: id: Input should be a valid string"),
    ],
)
def test_bad_input_names_the_file_and_line(tmp_path: Path, text: str, words: str) -> None:
    with pytest.raises(TaskError, match=words.replace("[", r"\[")):
        list(read_items(write(tmp_path, text)))


def test_the_items_before_a_bad_line_are_given_and_nothing_after(tmp_path: Path) -> None:
    path = write(tmp_path, '{"id": "a", "q": "x"}\n{oops\n{"id": "c", "q": "z"}\n')
    got: list[str] = []
    with pytest.raises(TaskError, match=":2:"):
        for item in read_items(path):
            got.append(item.id)
    assert got == ["a"]


def test_an_overlong_line_is_refused_and_a_missing_file_named(tmp_path: Path) -> None:
    path = write(tmp_path, '{"id": "a", "q": "' + "x" * MAX_LINE_BYTES + '"}\n')
    with pytest.raises(TaskError, match="a line of"):
        list(read_items(path))
    with pytest.raises(TaskError, match="cannot read the stream's items"):
        list(read_items(tmp_path / "absent.jsonl"))


def test_a_long_file_is_read_as_it_is_consumed(tmp_path: Path) -> None:
    path = tmp_path / "many.jsonl"
    with path.open("w") as f:
        for n in range(100_000):
            f.write(f'{{"id": "{n}", "q": "question {n}?"}}\n')
    items = read_items(path)
    first = list(itertools.islice(items, 3))  # a generator: nothing past what was taken is parsed
    assert [i.id for i in first] == ["0", "1", "2"]
    assert sum(1 for _ in items) == 100_000 - 3


def test_protocolbenchs_thousand_queries_are_read_whole() -> None:
    path = Path(__file__).resolve().parents[3] / "tasks-stream" / "protocolbench-top1000.jsonl"
    got = list(read_items(path))  # its first line starts with a byte-order mark
    assert len(got) == 1000 and [i.id for i in got[:3]] == ["1", "2", "3"] and got[-1].id == "1000"
    assert all(i.q.strip() for i in got)
