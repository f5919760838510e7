"""What ``gaiamesh bench-failstorm`` writes (locally and on a compose stack): ``failstorm.json``,
``failstorm.md`` (the measures and each kill) and ``failstorm.png`` (the storm over time)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .. import plots


def write_results(result: dict[str, Any], out: Path) -> None:
    """``failstorm.json``, ``failstorm.md`` (tables) and ``failstorm.png`` (the storm over time)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "failstorm.json").write_text(json.dumps(result, indent=2, default=str))
    s, c = result["summary"], result["config"]
    lines = [
        "# gaiamesh fail-storm", "",
        f"{len(c['tasks'])} tasks, calm then in a storm: every {c['every_s']} s, {c['kill']} of the agents "
        f"({c['agents'].count('=')}) get SIGKILL and come back "
        + (f"{c['down_s']} s later" if isinstance(c["down_s"], int | float) else f"by their {c['down_s']}")
        + f" ({c['mode']}, transport {c.get('transport', 'relay')}); routing {c['routing']}, "
        f"REJOIN_GRACE {c['rejoin_grace_s']} s.", "",
        "| measure | value |", "|---|---|",
        *(f"| {k} | {v} |" for k, v in s.items()),
        f"| audits (counters = frame log) | {'all ok' if result['audits_ok'] else 'MISMATCH'} |", "",
        "| kill at s | node | tool | detect s | tool routable again s | work redelivered s | next packet for the tool s "
        "| back after restart s |",
        "|---|---|---|---|---|---|---|---|",
        *(f"| {k['t']} | {k['node']} | {k['tool']} | {k['detect_s']} | {k['restored_s']} | {k['redeliver_s']} "
          f"| {k['recover_s']} | {k['back_s']} |"
          for k in result["kills"]),
    ]  # fmt: skip
    (out / "failstorm.md").write_text("\n".join(lines) + "\n")
    _plot(result, out / "failstorm.png")


def _plot(result: dict[str, Any], path: Path) -> None:
    plt = plots.pyplot()

    fig, ax = plt.subplots(figsize=(10, 3.8))
    for k in result["kills"]:
        ax.axvline(k["t"], color="#d62828", alpha=0.5, lw=1)
        if k["recover_s"] is not None:
            ax.plot(k["t"] + k["recover_s"], 1.12, "v", color="#999999", ms=4)
        if k.get("restored_s") is not None:
            ax.plot(k["t"] + k["restored_s"], 1.06, "v", color="#2a9d8f")
    for r in result["runs"]:
        if r["ended_s"] is not None:
            color = "#3b6ea5" if r["phase"] == "calm" else ("#f77f00" if r["status"] == "ok" else "#d62828")
            ax.plot(r["ended_s"], r["quality_score"], "o", color=color)
    ax.axvline(result["config"]["storm_started_s"], color="#555", ls="--", lw=1)
    ax.set_ylim(-0.05, 1.17)
    ax.set_xlabel("seconds")
    ax.set_ylabel("answer quality")
    ax.set_title("fail-storm: kills (red), tool routable again (green), next packet for it (grey), "
                 "runs calm (blue) and in the storm (orange)", fontsize=9)
    fig.tight_layout()
    plots.save(fig, path)
