"""``tlscost.md``: the measures' table (each mode's median [p10, p90], each ratio to off), what is
within noise, and the machine during each round."""

from __future__ import annotations

from collections.abc import Sequence

from ..load import MIN_WINDOW_S
from .results import MODES, REFERENCE, Measure, Ratio, Spread, TlsCost


def _num(v: float, unit: str) -> str:
    if unit == "ms":
        return f"{v:.2f}"
    if unit == "µs":
        return f"{v:.1f}"
    return f"{v:,.0f}" if v >= 100 else f"{v:.1f}"


def _cell(s: Spread | None, unit: str) -> str:
    if s is None:
        return "–"
    if s.p10 == s.p90:
        return _num(s.median, unit)
    return f"{_num(s.median, unit)} [{_num(s.p10, unit)}, {_num(s.p90, unit)}]"


def _ratio_cell(r: Ratio | None) -> str:
    if r is None:
        return "–"
    text = f"{r.median:.2f}× [{r.low:.2f}, {r.high:.2f}]"
    return text + (" (noise)" if r.verdict == "within noise" else "")


def table(measures: Sequence[Measure]) -> list[str]:
    """One row a measure: each mode's median [p10, p90], then each ratio to off."""
    others = [m for m in MODES if m != REFERENCE]
    lines = ["| measure | unit | " + " | ".join(MODES) + " | " + " | ".join(f"{m} / off" for m in others) + " |",
             "|---|---|" + "---|" * (len(MODES) + len(others))]  # fmt: skip
    for m in measures:
        cells = [_cell(m.modes.get(x), m.unit) for x in MODES] + [_ratio_cell(m.ratios.get(x)) for x in others]
        lines.append(f"| {m.label} | {m.unit} | " + " | ".join(cells) + " |")
    return lines


def _noise_lines(measures: Sequence[Measure]) -> list[str]:
    ratios = [r for m in measures for r in m.ratios.values()]
    if all(r.verdict == "one round: no verdict" for r in ratios):
        return ["One measured round: no spread to tell noise by (run more --rounds)."]
    said = [f"{m.label} under {mode}" for m in measures for mode, r in m.ratios.items() if r.verdict == "within noise"]
    if not said:
        return ["Every difference from off is beyond noise (its interval does not hold 1)."]
    return ["Within noise (the interval of the ratio holds 1; these rounds cannot tell it from off): "
            + "; ".join(said) + "."]  # fmt: skip


def _load_lines(result: TlsCost) -> list[str]:
    lines = ["| round | order | load 1m | other CPU, cores | steal % | contended |", "|---|---|---|---|---|---|"]
    for r in result.rounds:
        tag = f"{r.index} (warm-up, discarded)" if r.warmup else str(r.index)
        # other CPU left out where the round was too short for /proc's ticks to say it (load.py)
        other = f"{r.load.cpu_other:.2f}" if r.load.seconds >= MIN_WINDOW_S else "–"
        lines.append(f"| {tag} | {', '.join(r.order)} | {r.load.load_1m:.2f} | {other} | "
                     f"{r.load.steal_pct:.1f} | {'yes' if r.load.contended else 'no'} |")  # fmt: skip
    measured = sum(1 for r in result.rounds if not r.warmup)
    if result.contended_rounds:
        lines += ["", f"{result.contended_rounds} of {measured} measured rounds overlapped other load "
                  "(other processes kept ≥ 0.25 cores busy): times and CPU say something about that load too; "
                  "bytes do not depend on it."]  # fmt: skip
    return lines


def markdown(result: TlsCost) -> str:
    c = result.config
    lines = [
        "# What WIRE_TLS costs on the relay's wire",
        "",
        f"{result.started}, {result.seconds:.0f} s; {c.rounds} measured rounds after a warm-up, modes rotated "
        f"each round; {c.connects} connects and {c.messages} frames of each size per mode and round; protocol "
        f"{c.protocol}; {c.agent}. Python {c.python}, {c.openssl}, websockets {c.websockets}, {c.cpus} CPUs.",
        "",
        f"- relay CPU: {c.relay_cpu}",
        f"- agent CPU: {c.agent_cpu}",
        f"- bytes: TCP payload at a counting proxy in front of the agent ({c.handshakes} handshakes and "
        f"{c.bytes_frames} frames of each size per mode and round); a frame's bytes are its payload, its "
        "WebSocket header and mask, and under TLS its record's header and tag.",
        "",
        "Medians [p10, p90] over rounds (connect time: over every connect); ratios to off are paired within "
        "each round, median [95% bootstrap interval] over rounds.",
        "",
        *table(result.measures),
        "",
        *_noise_lines(result.measures),
        "",
        "## The machine during each round",
        "",
        *_load_lines(result),
    ]
    return "\n".join(lines) + "\n"

