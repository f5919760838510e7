"""A stream's figures from its items' fates (pure): latency percentiles, throughput, success,
retries, duplicates and the load on each worker (ProtocolBench reports the variance of the
per-worker counts as its load balance). The figures' models are metrics.json's
(:mod:`gaiamesh.evaluation.metrics`), where a stream's summary is written."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Protocol

from ..evaluation.metrics import Latency, StreamSummary  # metrics.json's schema, written once there

__all__ = ["Latency", "StreamSummary", "latency", "percentile", "summarize"]


class Send(Protocol):
    @property
    def sent_s(self) -> float: ...
    @property
    def outcome(self) -> str | None: ...


class Told(Protocol):
    """An item's fate as the summary reads it: a dispatcher's :class:`~.dispatch.Fate`, or a
    line of the coordinator's ``items.jsonl`` (:class:`~gaiamesh.evaluation.streams.FateLine`)."""

    @property
    def status(self) -> str: ...
    @property
    def queued_s(self) -> float: ...
    @property
    def answered_s(self) -> float | None: ...
    @property
    def answered_by(self) -> str | None: ...
    @property
    def duplicates(self) -> int: ...
    @property
    def sends(self) -> Sequence[Send]: ...


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of sorted values, by the nearest rank (no interpolation: a
    p99 of 100 items is the 99th slowest, one that happened)."""
    if not sorted_values:
        raise ValueError("no values")
    rank = max(1, math.ceil(q * len(sorted_values)))
    return sorted_values[rank - 1]


def latency(values: Iterable[float]) -> Latency | None:
    v = sorted(values)
    if not v:
        return None
    return Latency(n=len(v), mean=statistics.fmean(v), std=statistics.pstdev(v), p50=percentile(v, 0.5),
                   p95=percentile(v, 0.95), p99=percentile(v, 0.99), max=v[-1])  # fmt: skip


def summarize(fates: Sequence[Told], workers: Sequence[str]) -> StreamSummary:
    """An empty answer is a worker's reply, in the time and load figures, but not an answer: it
    is counted apart (``empty``), outside ``answered`` and ``success_rate``."""
    replied = [f for f in fates if f.status in ("answered", "empty") and f.answered_s is not None]
    answered = [f for f in replied if f.status == "answered"]
    counts = Counter({w: 0 for w in workers})
    counts.update(f.answered_by for f in replied if f.answered_by is not None)
    starts = [f.queued_s for f in fates]
    ends = [f.answered_s for f in replied if f.answered_s is not None]
    wall = (max(ends) - min(starts)) if ends and starts else 0.0
    sends = [a for f in fates for a in f.sends]
    return StreamSummary(
        items=len(fates), answered=len(answered), empty=len(replied) - len(answered),
        failed=sum(f.status == "failed" for f in fates),
        success_rate=len(answered) / len(fates) if fates else 0.0,
        retries=sum(max(0, len(f.sends) - 1) for f in fates),
        duplicates=sum(f.duplicates for f in fates), lost_sends=sum(a.outcome == "lost" for a in sends),
        wall_s=wall, items_per_min=len(replied) / wall * 60 if wall > 0 else 0.0,
        latency=latency(f.answered_s - f.queued_s for f in replied if f.answered_s is not None),
        queue_wait=latency(f.sends[0].sent_s - f.queued_s for f in fates if f.sends),
        per_worker=dict(counts), worker_variance=statistics.pvariance(list(counts.values())) if counts else 0.0,
    )  # fmt: skip
