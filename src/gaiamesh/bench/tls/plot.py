"""``tlscost.png``: four panels of bars, a mode each, with whiskers at p10 and p90."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ...mesh.wiretls import WireTls
from .. import plots
from .results import MODES, SIZES, Spread, TlsCost

if TYPE_CHECKING:
    from matplotlib.axes import Axes


def _bars(ax: Axes, groups: list[str], cells: dict[WireTls, list[Spread | None]], title: str,
          less: Sequence[float] = ()) -> None:  # fmt: skip
    """One bar a mode in each group: the median (less ``less[i]``), whiskers at p10 and p90."""
    width = 0.8 / len(MODES)
    for i, mode in enumerate(MODES):
        xs = [g + (i - (len(MODES) - 1) / 2) * width for g in range(len(groups))]
        got = [c or Spread(median=0.0, p10=0.0, p90=0.0, n=0) for c in cells[mode]]
        base = list(less) or [0.0] * len(got)
        ax.bar(xs, [c.median - b for c, b in zip(got, base, strict=True)], width, label=mode,
               yerr=[[c.median - c.p10 for c in got], [c.p90 - c.median for c in got]], capsize=2)  # fmt: skip
    ax.set_xticks(range(len(groups)), groups)
    ax.set_title(title)
    ax.legend()


def plot(result: TlsCost, path: Path) -> None:
    """Four panels: connect time, handshake bytes, wire bytes a frame adds, CPU per frame; each
    bar a median with whiskers at p10 and p90."""
    plt = plots.pyplot()
    by = {m.key: m for m in result.measures}

    def cells(keys: list[str]) -> dict[WireTls, list[Spread | None]]:
        return {mode: [by[k].modes.get(mode) for k in keys] for mode in MODES}

    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    (a, b), (c, d) = axes
    _bars(a, ["wall", "relay CPU", "agent CPU"], cells(["connect_ms", "connect_cpu_relay_ms", "connect_cpu_agent_ms"]),
          "a connect (and its close, for CPU), ms")  # fmt: skip
    _bars(b, ["relay → agent", "agent → relay", "close"], cells(["handshake_up_B", "handshake_down_B", "close_B"]),
          "handshake bytes at the socket")  # fmt: skip
    _bars(c, [f"{s} B" for s in SIZES], cells([f"frame_B_{s}" for s in SIZES]),
          "bytes a frame adds beyond its payload", less=SIZES)  # fmt: skip
    cpu = [f"cpu_{who}_us_{s}" for who in ("relay", "agent") for s in SIZES]
    _bars(d, [f"{k.split('_')[1]} {k.rsplit('_', 1)[1]} B" for k in cpu], cells(cpu), "CPU per frame, µs")
    fig.suptitle("Gaia Mesh: the cost of WIRE_TLS, off / tls / mtls side by side")
    fig.tight_layout()
    plots.save(fig, path)

