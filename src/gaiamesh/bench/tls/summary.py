"""The pure part of ``bench-tls``: the order modes run in, each mode's spread, each ratio to ``off``
paired within rounds with its interval, and whether that interval tells it from noise."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from ...mesh.wiretls import WireTls
from ..stats import median_interval
from .results import MEASURES, MODES, REFERENCE, Measure, Ratio, Round, Spread, Verdict


def order(round_index: int) -> list[WireTls]:
    """The modes of round ``round_index``, rotated so that each leads in turn (drift and warmth
    of the machine then fall on every mode alike)."""
    k = round_index % len(MODES)
    return [*MODES[k:], *MODES[:k]]


def spread(values: Sequence[float]) -> Spread:
    """Median and p10/p90 (linear interpolation; one value is its own spread)."""
    if not values:
        raise ValueError("no values to spread")
    if len(values) == 1:
        return Spread(median=values[0], p10=values[0], p90=values[0], n=1)
    cuts = statistics.quantiles(values, n=10, method="inclusive")
    return Spread(median=statistics.median(values), p10=cuts[0], p90=cuts[-1], n=len(values))


def verdict(low: float, high: float, rounds: int) -> Verdict:
    """Whether a ratio's interval tells it from 1 (one round has no spread to judge by)."""
    if rounds < 2:
        return "one round: no verdict"
    return "within noise" if low <= 1.0 <= high else "beyond noise"


def ratio(values: Sequence[float], reference: Sequence[float]) -> Ratio | None:
    """``values`` over ``reference``, round by round (the same round's pair), summarized; None
    without a pair whose reference is not 0."""
    pairs = [v / r for v, r in zip(values, reference, strict=True) if r]
    if not pairs:
        return None
    low, high = median_interval(pairs)
    return Ratio(median=statistics.median(pairs), low=low, high=high, rounds=len(pairs),
                 verdict=verdict(low, high, len(pairs)))  # fmt: skip


def _per_round(rounds: Sequence[Round], mode: WireTls, key: str) -> list[float]:
    return [m.values[key] for r in rounds for m in r.modes if m.mode == mode and key in m.values]


def _samples(rounds: Sequence[Round], mode: WireTls, key: str) -> list[float]:
    """What a mode's spread is of: every connect for the connect time, else one value a round."""
    if key == "connect_ms":
        return [x for r in rounds for m in r.modes if m.mode == mode for x in m.connect_ms]
    return _per_round(rounds, mode, key)


def summarize(rounds: Sequence[Round]) -> list[Measure]:
    """Every measure over the measured rounds (the warm-up is left out): each mode's spread and
    its paired ratio to ``off``."""
    measured = [r for r in rounds if not r.warmup]
    out = []
    for d in MEASURES:
        modes = {m: spread(s) for m in MODES if (s := _samples(measured, m, d.key))}
        base = _per_round(measured, REFERENCE, d.key)
        ratios = {m: got for m in MODES if m != REFERENCE
                  and (got := ratio(_per_round(measured, m, d.key), base)) is not None}  # fmt: skip
        out.append(Measure(key=d.key, label=d.label, unit=d.unit, modes=modes, ratios=ratios))
    return out

