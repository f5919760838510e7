"""What a bench's summary says about how fair its comparison was: the order it ran in, the
machine's load during its runs, and, for each time difference from ``json``, whether the runs
can tell it, and whether it was the model's time or the wire's. Pure functions over the bench's
rows and intervals; they return markdown.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .. import stats as ci
from ..load import CONTENDED_CORES, MIN_WINDOW_S

Row = Mapping[str, Any]


def _contended(row: Row) -> bool:
    return str(row.get("contended")) in ("True", "true", "1")


def contended_runs(rows: Sequence[Row], group_of: Callable[[Row], str]) -> dict[str, int]:
    """Per group, how many of its runs overlapped other load."""
    out: dict[str, int] = {}
    for row in rows:
        out[group_of(row)] = out.get(group_of(row), 0) + _contended(row)
    return out


def how_it_ran(rows: Sequence[Row], seed: int | None, backend: str) -> str:
    ordered = any(row.get("order") not in ("", None) for row in rows)
    order = (f"every variant of a task back to back, in an order shuffled with seed {seed} for each task and "
             "repeat, after a warm-up run per team that is not counted" if ordered and seed is not None
             else "the order of the runs is not known (runs gathered from folders)")  # fmt: skip
    return f"{len(rows)} runs; model: {backend}; order: {order}.\n\n"


def load_section(rows: Sequence[Row], group_of: Callable[[Row], str]) -> str:
    """The machine's load per group, and which groups' runs overlapped other load."""
    measured = [r for r in rows if r.get("cpu_other") not in ("", None)]
    short = sum(1 for r in rows if r.get("cpu_other") in ("", None) and r.get("load_1m") not in ("", None))
    too_short = (f"\n\n{short} runs lasted under {MIN_WINDOW_S:.0f} s, too short for /proc's 10 ms ticks to tell "
                 "other load from none (replayed runs): their load is not judged." if short else "")  # fmt: skip
    if not measured:
        return "\n## Load during the runs\n\n" + (too_short.strip() or "Not measured (runs gathered from folders).") + "\n"
    lines = ["| group | runs | overlapped other load | cpu_other (cores, median) | load_1m (max) | steal % (max) | other containers (max) |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    for group in dict.fromkeys(group_of(r) for r in measured):
        mine = [r for r in measured if group_of(r) == group]
        containers = [int(r["containers"]) for r in mine if r.get("containers") not in ("", None)]
        lines.append(
            f"| {group} | {len(mine)} | {sum(_contended(r) for r in mine)} | "
            f"{statistics.median(float(r['cpu_other']) for r in mine):.2f} | "
            f"{max(float(r['load_1m']) for r in mine):.2f} | {max(float(r['steal_pct']) for r in mine):.1f} | "
            f"{max(containers) if containers else '–'} |"
        )
    hit = sorted({group_of(r) for r in measured if _contended(r)})
    said = (f"{sum(_contended(r) for r in measured)} of {len(measured)} runs overlapped other load (processes "
            f"outside this bench kept ≥ {CONTENDED_CORES} cores busy on average): the intervals of "
            f"{', '.join(hit)} include them, and their times may be that load's." if hit else
            f"No run overlapped other load (processes outside this bench stayed under {CONTENDED_CORES} cores).")  # fmt: skip
    return "\n## Load during the runs\n\n" + said + too_short + "\n\n" + "\n".join(lines) + "\n"


def time_section(diffs: Mapping[str, Mapping[str, ci.Interval]], contended: Mapping[str, int]) -> str:
    """First the model-free measures' differences from json, then each time difference with the
    model's share of it and what it can be said to be."""
    if not diffs:
        return ""
    reference = sum(n for g, n in contended.items() if g.endswith(ci.REFERENCE))

    def cell(i: ci.Interval | None, measure: str) -> str:
        if i is None:
            return "–"
        f = ci.fmt_value  # the intervals' own number format
        return f"{'+' if i.mean > 0 else ''}{f(measure, i.mean)} [{f(measure, i.low)}, {f(measure, i.high)}]"

    free = [f"| group | {' | '.join(f'{m} - {ci.REFERENCE}' for m in ci.MODEL_FREE)} |", "|---|" + "---|" * len(ci.MODEL_FREE)]
    timed = [f"| group | elapsed_ms - {ci.REFERENCE} | llm_ms - {ci.REFERENCE} | what it is |", "|---|---|---|---|"]
    for group, d in diffs.items():
        free.append(f"| {group} | " + " | ".join(cell(d.get(m), m) for m in ci.MODEL_FREE) + " |")
        verdict = ci.time_verdict(d, contended.get(group, 0) + reference)
        timed.append(f"| {group} | {cell(d.get('elapsed_ms'), 'elapsed_ms')} | {cell(d.get('llm_ms'), 'llm_ms')} | {verdict} |")
    return (
        f"\n## What the protocol itself costs: model-free measures, difference from `{ci.REFERENCE}`\n\n"
        "The relay's decoding and the agents' encoding per message (µs, each run's median) and the bytes on "
        "the wire: no model time is in them, so these compare protocols first.\n\n" + "\n".join(free) + "\n"
        f"\n## Time, difference from `{ci.REFERENCE}`, and how much of it was the model's\n\n"
        "A run's time is mostly the model's; a difference inside model calls is not the protocol's.\n\n"
        + "\n".join(timed) + "\n"
    )
