"""Intervals for every bench: each measure's mean per group with a 95% interval, and its paired
difference against the same group under the ``json`` protocol; and a median's interval (what
``tls/`` gives each ratio), cut from its draws as the means' are.

The interval is a two-level percentile bootstrap: tasks are drawn with replacement, then each
drawn task's repeats with replacement, and the mean is taken of each draw. Tasks differ far
more than repeats of one task do, so drawing runs as if independent would make intervals too
narrow. A paired difference is taken run by run (the same task and repeat under both
protocols) before it is bootstrapped in the same way, which removes what the tasks themselves
add. Pure functions over the bench's rows; nothing here reads or writes files.
"""

from __future__ import annotations

import random
import statistics
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

# The measures given an interval: quality, bytes, the header's share of them, packets, time, tokens,
# and the protocol's own cost per message, which no model time is in (the relay's decoding, the
# agents' encoding: medians per run, µs).
# On the native wire also the bytes its sockets moved (``http_bytes``: HTTP heads, framing and
# bodies, both ways), compared with json on the same wire.
MEASURES = (
    "quality_score", "exact_match", "squad_f1", "bytes", "http_bytes", "header_share", "pkt_cnt", "elapsed_ms",
    "llm_ms", "token_sum", "decode_us_p50", "encode_us_p50",
)  # fmt: skip
MODEL_FREE = ("decode_us_p50", "encode_us_p50", "bytes", "http_bytes")
REFERENCE = "json"  # the protocol every other one is compared with, run by run
RESAMPLES = 2000
LEVEL = 0.95

Row = Mapping[str, Any]
Label = Callable[[Row], str]


@dataclass(frozen=True)
class Interval:
    """A mean and its 95% interval, over ``runs`` runs of ``tasks`` tasks."""

    mean: float
    low: float
    high: float
    runs: int
    tasks: int


def value(row: Row, measure: str) -> float | None:
    """One run's value of ``measure`` (None where the run has none: a server that gave no
    token counts)."""

    def num(key: str) -> float | None:
        v = row.get(key)
        return None if v in ("", None) else float(v)

    if measure == "http_bytes":
        tx, rx = num("http_tx"), num("http_rx")
        return None if tx is None or rx is None else tx + rx
    if measure == "header_share" and num("header_share") is not None:
        return num("header_share")  # metrics.json's own: each message's header bytes over its bytes
    if measure in ("bytes", "header_share"):
        tx, rx, header = num("bytes_tx"), num("bytes_rx"), num("header_overhead")
        if tx is None or rx is None:
            return None
        if measure == "bytes":
            return tx + rx
        return None if header is None or tx + rx == 0 else header / (tx + rx)
    return num(measure)


def bootstrap(per_task: Mapping[str, list[float]], resamples: int = RESAMPLES, seed: int = 0) -> Interval | None:
    """The mean of every value and its interval by the two-level bootstrap (tasks, then each
    task's repeats); None without values. Seeded: the same rows give the same interval."""
    tasks = [values for values in per_task.values() if values]
    if not tasks:
        return None
    rng = random.Random(seed)
    means = []
    for _ in range(resamples):
        drawn = [rng.choice(tasks) for _ in tasks]
        means.append(statistics.fmean(rng.choice(t) for t in drawn for _ in t))
    low, high = _cut(sorted(means))
    every = [v for t in tasks for v in t]
    return Interval(statistics.fmean(every), low, high, len(every), len(tasks))


def median_interval(values: Sequence[float], resamples: int = RESAMPLES, seed: int = 0) -> tuple[float, float]:
    """A 95% percentile-bootstrap interval of the median of ``values`` (seeded: repeatable)."""
    rng = random.Random(seed)
    return _cut(sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(resamples)))


def _cut(draws: Sequence[float]) -> tuple[float, float]:
    """The 95% percentile interval of sorted bootstrap ``draws``: the values at each tail's cut."""
    tail, n = (1 - LEVEL) / 2, len(draws)
    return draws[int(tail * n)], draws[int((1 - tail) * n) - 1]


def intervals(rows: Sequence[Row], label: Label) -> dict[str, dict[str, Interval]]:
    """Per group (as ``label`` names it) and measure, the mean with its interval."""
    samples: dict[str, dict[str, dict[str, list[float]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for row in rows:
        for measure in MEASURES:
            v = value(row, measure)
            if v is not None:
                samples[label(row)][measure][str(row.get("task_id"))].append(v)
    return _bootstrapped(samples)


def differences(rows: Sequence[Row], label: Label) -> dict[str, dict[str, Interval]]:
    """Per group that is not under ``json`` itself, and measure: the mean difference from the
    same group under ``json``, run by run (same task, same repeat), with its interval. Groups
    with no ``json`` counterpart in ``rows`` are left out."""
    reference = {(label(r), str(r.get("task_id")), str(r.get("repeat"))): r for r in rows if r.get("protocol") == REFERENCE}
    samples: dict[str, dict[str, dict[str, list[float]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for row in rows:
        if row.get("protocol") in (REFERENCE, "baseline"):
            continue
        twin = reference.get((label({**row, "protocol": REFERENCE}), str(row.get("task_id")), str(row.get("repeat"))))
        if twin is None:
            continue
        for measure in MEASURES:
            a, b = value(row, measure), value(twin, measure)
            if a is not None and b is not None:
                samples[label(row)][measure][str(row.get("task_id"))].append(a - b)
    return _bootstrapped(samples)


def _bootstrapped(samples: Mapping[str, Mapping[str, Mapping[str, list[float]]]]) -> dict[str, dict[str, Interval]]:
    out: dict[str, dict[str, Interval]] = {}
    for group, measures in samples.items():
        for measure, per_task in measures.items():
            got = bootstrap(per_task)
            if got is not None:
                out.setdefault(group, {})[measure] = got
    return out


def as_json(table: Mapping[str, Mapping[str, Interval]]) -> dict[str, dict[str, dict[str, float]]]:
    return {g: {m: asdict(i) for m, i in ms.items()} for g, ms in table.items()}


def fmt_value(measure: str, v: float) -> str:
    if measure in ("quality_score", "exact_match", "squad_f1", "header_share"):
        return f"{v:.3f}"
    if measure.endswith("_us_p50"):
        return f"{v:,.1f}"
    return f"{v:,.0f}"


def holds_zero(i: Interval) -> bool:
    return i.low <= 0 <= i.high


def time_verdict(diff: Mapping[str, Interval], contended: int) -> str:
    """What a group's time difference from ``json`` (``diff``: its paired differences) can be
    said to be: no difference these runs can tell; the model's (most of it was inside model
    calls, which a protocol does not change: the model answered more slowly, or differently);
    or beyond the model's time. ``contended``: how many of the group's or json's runs
    overlapped other load (``bench/load.py``), which a difference may then be."""
    elapsed, llm = diff.get("elapsed_ms"), diff.get("llm_ms")
    if elapsed is None:
        return "no time measured"
    if holds_zero(elapsed):
        said = "no difference these runs can tell (its interval holds 0)"
    elif llm is not None and llm.mean * elapsed.mean > 0 and abs(llm.mean) >= 0.5 * abs(elapsed.mean):
        share = min(1.0, llm.mean / elapsed.mean)
        said = (f"the model's time, not the protocol's: {share:.0%} of it was inside model calls; compare the "
                "model-free measures, or replay the runs (--replay) to hold the model fixed")  # fmt: skip
    else:
        said = "beyond the model's time: the wire, the protocol or the harness"
    if contended:
        said += f"; {contended} of the runs compared overlapped other load, which it may be"
    return said


def markdown(table: Mapping[str, Mapping[str, Interval]], signed: bool = False) -> str:
    """One row per group, one column per measure: ``mean [low, high]``."""
    head = "| group | runs | " + " | ".join(MEASURES) + " |"
    lines = [head, "|" + "---|" * (len(MEASURES) + 2)]
    for group, measures in table.items():
        runs = max(i.runs for i in measures.values())
        cells = []
        for m in MEASURES:
            i = measures.get(m)
            if i is None:
                cells.append("–")
            else:
                sign = "+" if signed and i.mean > 0 else ""
                cells.append(f"{sign}{fmt_value(m, i.mean)} [{fmt_value(m, i.low)}, {fmt_value(m, i.high)}]")
        lines.append(f"| {group} | {runs} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
