"""Intervals of a bench: the two-level bootstrap and the paired difference against json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gaiamesh.bench import stats
from gaiamesh.bench.compare.report import labeler, write_reports


def run(task: str, repeat: int, protocol: str = "json", **over: Any) -> dict[str, Any]:
    row = {"task_id": task, "repeat": repeat, "protocol": protocol, "strategy": "pipeline", "status": "ok",
           "bytes_tx": 1000, "bytes_rx": 500, "header_overhead": 150, "pkt_cnt": 8, "elapsed_ms": 2000,
           "llm_ms": 1800, "token_sum": 900, "quality_score": 1.0, "exact_match": 1, "squad_f1": 1.0}  # fmt: skip
    return row | over


def test_equal_runs_have_a_point_interval_and_the_same_rows_the_same_interval() -> None:
    got = stats.bootstrap({"a": [3.0, 3.0], "b": [3.0]})
    assert got == stats.Interval(3.0, 3.0, 3.0, runs=3, tasks=2)
    noisy = {"a": [0.0, 1.0, 0.5], "b": [0.2, 0.9], "c": [1.0, 0.0]}
    first, again = stats.bootstrap(noisy), stats.bootstrap(noisy)
    assert first == again and first is not None and first.low < first.mean < first.high
    assert stats.bootstrap({"a": []}) is None


def test_tasks_are_drawn_before_repeats_so_task_differences_widen_the_interval() -> None:
    # Two tasks, one always right and one always wrong: either may be drawn twice, so the
    # interval spans 0 to 1. Six independent runs would give a much narrower one.
    got = stats.bootstrap({"easy": [1.0, 1.0, 1.0], "hard": [0.0, 0.0, 0.0]})
    assert got is not None and (got.mean, got.low, got.high) == (0.5, 0.0, 1.0)
    flat = stats.bootstrap({str(i): [v] for i, v in enumerate([1.0, 1.0, 1.0, 0.0, 0.0, 0.0])})
    assert flat is not None and flat.high - flat.low < 1.0


def test_values_derived_from_a_run() -> None:
    row = run("a", 1)
    assert stats.value(row, "bytes") == 1500 and stats.value(row, "header_share") == pytest.approx(0.1)
    assert stats.value(run("a", 1, token_sum=""), "token_sum") is None  # a server that gave no counts


def test_each_run_is_paired_with_the_same_task_and_repeat_under_json() -> None:
    rows = [run(t, r) for t in "abc" for r in (1, 2)]
    rows += [run(t, r, "compressed", bytes_tx=900, header_overhead=40) for t in "abc" for r in (1, 2)]
    rows += [run(t, 1, "signed", quality_score=0.0 if t == "a" else 1.0) for t in "abc"]
    rows += [run("a", 1, "baseline")]
    diffs = stats.differences(rows, labeler(rows))
    assert set(diffs) == {"compressed", "signed"}  # json is the reference; the baseline has none
    assert (diffs["compressed"]["bytes"].mean, diffs["compressed"]["bytes"].low) == (-100.0, -100.0)
    assert diffs["compressed"]["quality_score"] == stats.Interval(0.0, 0.0, 0.0, runs=6, tasks=3)
    signed = diffs["signed"]["quality_score"]
    assert signed.mean == pytest.approx(-1 / 3) and signed.low == -1.0 and signed.high == 0.0 and signed.runs == 3
    # a group whose runs have no json twin (another strategy) is left out
    orphan = [run("a", 1, "compressed", strategy="orchestrated"), run("a", 1, strategy="pipeline")]
    assert "orchestrated · compressed" not in stats.differences(orphan, labeler(orphan))


def test_the_bench_report_writes_intervals_and_differences(tmp_path: Path) -> None:
    rows = [run(t, r) for t in "ab" for r in (1, 2)] + [run(t, r, "a2a", bytes_rx=800) for t in "ab" for r in (1, 2)]
    write_reports(rows, tmp_path)
    written = json.loads((tmp_path / "stats.json").read_text())
    assert written["reference"] == "json" and written["intervals"]["a2a"]["bytes"]["mean"] == 1800
    assert written["differences"]["a2a"]["bytes"] == {"mean": 300.0, "low": 300.0, "high": 300.0, "runs": 4, "tasks": 2}
    summary = (tmp_path / "summary.md").read_text()
    assert "## Means with 95% intervals" in summary and "| a2a | 4 | 1.000 [1.000, 1.000]" in summary
    assert "+300 [300, 300]" in summary
    assert (tmp_path / "comparison.png").read_bytes()[:4] == b"\x89PNG"


def test_the_printed_table_has_one_header_per_summary_column() -> None:
    from gaiamesh.bench.compare.report import SHORT, SUMMARY

    assert [c for c, _ in SUMMARY] == list(SHORT)  # a column added to one must be added to the other
