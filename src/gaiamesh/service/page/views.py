"""What the live page shows, made from the API's models (pure: no request, no service): a
session's history as turns, a finished stream's figures in words, and the comparison's means."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from typing import Any

from ...errors import RunStatus
from ..models import RunState, RunView, StreamView


def group_turns(messages: list[Any], runs: dict[str, RunView]) -> list[dict[str, Any]]:
    """A session's history as the page shows it: system notes, and one turn per run (its
    question, answer or error, metrics and how many frames it took); frames are counted, not
    listed (the run's page lists them)."""
    items: list[dict[str, Any]] = []
    by_run: dict[str, dict[str, Any]] = {}
    for m in messages:
        if m.run_id is None:
            items.append({"kind": m.type.value, "text": m.content.get("text", json.dumps(m.content))})
            continue
        turn = by_run.get(m.run_id)
        if turn is None:
            run = runs.get(m.run_id)
            turn = by_run[m.run_id] = {"kind": "turn", "run": run, "frames": 0, "question": None,
                                       "answer": None, "metrics": None, "error": None}  # fmt: skip
            items.append(turn)
        if m.type.value == "frame":
            turn["frames"] += 1
        elif m.type.value in ("question", "answer", "metrics", "error"):
            turn[m.type.value] = m.content
    return items


def comparison(runs: list[RunView]) -> dict[str, Any]:
    """Finished runs that answered, grouped by strategy and protocol: the mean of what the
    comparison plots show."""
    groups: dict[str, list[Any]] = {}
    for run in runs:
        m = run.metrics
        if run.state is RunState.FINISHED and m is not None and m.status == RunStatus.OK:
            wire = f" ({m.transport})" if m.transport != "relay" else ""
            groups.setdefault(f"{m.strategy or 'pipeline'} · {m.protocol}{wire}", []).append(m)
    labels = sorted(groups)

    def mean(f: Callable[[Any], float | None]) -> list[float | None]:
        # runs without a gold answer have no score: left out of the mean (None: nothing scored)
        values = [[v for m in groups[g] if (v := f(m)) is not None] for g in labels]
        return [round(statistics.fmean(v), 4) if v else None for v in values]

    return {
        "labels": labels,
        "runs": [len(groups[g]) for g in labels],
        "bytes": mean(lambda m: m.bytes_tx + m.bytes_rx),
        "header_share": mean(_header_share),
        "seconds": mean(lambda m: m.elapsed_ms / 1000),
        "quality": mean(lambda m: m.quality_score),
    }


def figures(stream: StreamView) -> list[tuple[str, str]]:
    """A finished stream's summary as the page's table shows it: a name and its value in words."""
    r = stream.report
    if r is None:
        return []
    s = r.summary

    def secs(v: float | None) -> str:
        return "–" if v is None else f"{v:.2f} s"

    rows = [
        ("status", r.status), ("items", f"{s.answered} answered of {s.items} ({s.empty} empty, {s.failed} failed)"),
        ("protocol · transport", f"{r.protocol} · {r.transport}"), ("workers", str(r.workers)), ("team", r.team),
        ("items per minute", f"{s.items_per_min:.1f}"), ("wall time", secs(s.wall_s)),
        ("latency p50 / p95", f"{secs(s.latency.p50 if s.latency else None)} / {secs(s.latency.p95 if s.latency else None)}"),
        ("service p50 / p95", f"{secs(r.service.p50 if r.service else None)} / {secs(r.service.p95 if r.service else None)}"),
        ("queue wait p50", secs(s.queue_wait.p50 if s.queue_wait else None)),
        ("bytes per item (mean, p50, p95)", f"{r.bytes.mean:,.0f}, {r.bytes.p50:,.0f}, {r.bytes.p95:,.0f}" if r.bytes else "–"),
        ("retries · duplicates · lost sends", f"{s.retries} · {s.duplicates} · {s.lost_sends}"),
        ("load variance (answers per worker)", f"{s.worker_variance:.2f}"),
        ("quality (scored items)", "–" if r.quality is None else f"{r.quality:.3f}"),
    ]  # fmt: skip
    return rows + ([("error", r.error)] if r.error else [])


def _header_share(m: Any) -> float:
    """The protocol's share of the bytes: its headers in the frames, and on the native wire its
    envelope around them in the HTTP bodies (``layers.envelope_bytes``)."""
    envelope = (m.layers.envelope_bytes or 0) if m.layers is not None else 0
    return (m.header_overhead + envelope) / max(1, m.bytes_tx + m.bytes_rx + envelope)
