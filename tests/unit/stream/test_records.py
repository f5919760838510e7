"""items.csv: a row per item as it ends, in the columns scripts read, each item once."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from gaiamesh.errors import RunError
from gaiamesh.stream.dispatch import Dispatcher
from gaiamesh.stream.items import StreamItem
from gaiamesh.stream.records import COLUMNS, ItemRow, ItemsCsv


def test_rows_carry_each_items_timings_and_fate(tmp_path: Path) -> None:
    d = Dispatcher(["a", "b"], max_attempts=2)
    for i in range(3):
        d.add(StreamItem(id=str(i), q=f"q{i}?"), 10.0)
    d.assign(10.5)
    d.lost("a", 11.0)
    d.answered("1", "b", 12.0, "one")
    d.assign(12.0)
    d.answered("0", "b", 13.0, "zero")
    path = tmp_path / "items.csv"
    with ItemsCsv(path) as out:
        for fate in d.fates.values():
            out.write(ItemRow.of(fate, started_s=10.0, wire_bytes=100))
        with pytest.raises(RunError, match="told once"):
            out.write(ItemRow.of(d.fates["0"], started_s=10.0))
    rows = {r["item_id"]: r for r in csv.DictReader(path.open())}
    assert tuple(csv.DictReader(path.open()).fieldnames or ()) == COLUMNS
    zero = rows["0"]
    assert (zero["worker"], zero["status"], zero["prediction"], zero["sends"], zero["retries"]) == ("b", "answered", "zero", "2", "1")
    assert float(zero["queue_wait_s"]) == 0.5 and float(zero["latency_s"]) == 3.0 and zero["bytes"] == "100"
    assert rows["2"]["status"] == "queued" and rows["2"]["answered_s"] == "" and rows["2"]["sends"] == "0"
