"""The audit of a run: ``metrics.json`` against what the run's own records say."""

from __future__ import annotations

from pathlib import Path

from ..mesh.records import Totals
from .metrics import RunMetrics, read_log
from .modeltime import model_time, run_memories


def audit(run_dir: Path) -> list[tuple[str, object, object]]:
    """Compare ``metrics.json`` with the totals recomputed from ``frames.jsonl`` (and the model's
    time from the agents' memory in ``run_artifacts.tar.gz``, by the packets the log counted).

    Returns ``(counter, in metrics.json, from the frame log)`` for every counter; equal pairs
    mean the run's numbers are consistent with the frames it actually carried.
    """
    metrics = RunMetrics.read(run_dir / "metrics.json")
    records = read_log(run_dir / "frames.jsonl")
    totals = Totals()
    for record in records:
        totals.add(record)
    rows: list[tuple[str, object, object]] = [
        (k, getattr(metrics, k), getattr(totals, k)) for k in Totals.COUNTERS
    ]
    rows.append(("llm_ms", metrics.llm_ms, round(model_time(records, run_memories(run_dir))[0], 3)))
    return rows
