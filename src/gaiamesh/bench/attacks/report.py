"""What ``gaiamesh bench-attacks`` writes: ``attacks.csv`` (one row per protocol x transport x
attack), ``attacks.json`` (the rows and the summary), ``attacks.md`` and ``attacks.png`` (the matrix)."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path
from typing import Any

from ...settings import MeshSettings
from .. import plots
from .judge import ATTACKS, AttackRow

DEFAULT_WINDOW_S = MeshSettings.model_fields["replay_window_s"].default

COLORS = {"blocked": "#2e7d32", "detected": "#f9a825", "succeeded": "#c62828", "n/a": "#bdbdbd"}


def summary(rows: list[AttackRow]) -> dict[str, Any]:
    """Outcomes counted, and the checks every cell must pass (no lost frame, no silent change of
    answer, every audit agreeing). ``answers_changed`` counts runs that ended ok with another
    answer than the calm run's (a change nobody saw); a run the attack broke (a flipped frame
    its receiver could not read, ``agent_error``) ends otherwise, and ``runs_broken`` counts those."""
    return {
        "cells": len(rows),
        "outcomes": dict(Counter(r.outcome for r in rows)),
        "frames_lost": sum(r.frames_lost for r in rows),
        "answers_changed": sum(r.answer_changed for r in rows),
        "runs_broken": sum(r.status not in ("", "ok") for r in rows),
        "audits_failed": sum(r.audit_ok is False for r in rows),
        "calm_not_ok": sorted({r.column for r in rows if r.calm_status != "ok"}),
    }


def markdown(rows: list[AttackRow], config: dict[str, Any]) -> str:
    protocols = list(dict.fromkeys(r.column for r in rows))
    attacks = [a.name for a in ATTACKS if any(r.attack == a.name for r in rows)]
    at = {(r.column, r.attack): r.outcome for r in rows}
    window = config.get("window_s")
    lines = [f"# Attacks ({config.get('task', '')}, {config.get('backend', '')}, transport relay; "
             "+tls, +mtls: under WIRE_TLS)", "",
             *([f"The replay window of these runs is {window:g} s (`--window`, so that `late` need not wait out "
                f"REPLAY_WINDOW_S's default of {DEFAULT_WINDOW_S:g} s): `late` holds a frame {window:g} s and one more.", ""]
               if window else []),
             "| attack | " + " | ".join(protocols) + " |", "|---|" + "---|" * len(protocols)]  # fmt: skip
    lines += [f"| {a} | " + " | ".join(at.get((p, a), "") for p in protocols) + " |" for a in attacks]
    s = summary(rows)
    lines += ["", f"{s['cells']} cells: " + ", ".join(f"{k} {v}" for k, v in sorted(s["outcomes"].items()))
              + f"; frames lost {s['frames_lost']}, answers changed silently {s['answers_changed']} (runs that "
              f"ended ok with another answer), runs the attack broke {s['runs_broken']} (ended otherwise: the status "
              f"below), audits failed {s['audits_failed']}.", "", "## Evidence", "",
              "| protocol | attack | outcome | run ended | evidence |", "|---|---|---|---|---|"]  # fmt: skip
    lines += [f"| {r.column} | {r.attack} | {r.outcome} | {r.status or '–'} | {r.evidence.replace('|', '/')[:300]} |"
              for r in rows]  # fmt: skip
    return "\n".join(lines) + "\n"


def plot(rows: list[AttackRow], path: Path) -> None:
    from matplotlib.patches import Patch

    plt = plots.pyplot()

    protocols = list(dict.fromkeys(r.column for r in rows))
    attacks = [a.name for a in ATTACKS if any(r.attack == a.name for r in rows)]
    at = {(r.column, r.attack): r.outcome for r in rows}
    fig, ax = plt.subplots(figsize=(1.1 * len(protocols) + 2.5, 0.45 * len(attacks) + 1.6))
    for y, a in enumerate(attacks):
        for x, p in enumerate(protocols):
            outcome = at.get((p, a), "n/a")
            ax.add_patch(plt.Rectangle((x, y), 0.95, 0.9, color=COLORS[outcome]))
    ax.set_xlim(0, len(protocols))
    ax.set_ylim(0, len(attacks))
    ax.set_xticks([x + 0.47 for x in range(len(protocols))], protocols, rotation=30)
    ax.set_yticks([y + 0.45 for y in range(len(attacks))], attacks)
    ax.invert_yaxis()
    ax.legend(handles=[Patch(color=c, label=k) for k, c in COLORS.items()], loc="upper center",
              bbox_to_anchor=(0.5, -0.18), ncol=4, frameon=False)  # fmt: skip
    ax.set_title("What each attack got, per protocol\n(relay's WebSocket; /native: its own wire; +tls, +mtls: under WIRE_TLS)")
    fig.tight_layout()
    # tight: the image grows to hold the title and the legend below the axes, however few the columns
    plots.save(fig, path, bbox_inches="tight")


def write(rows: list[AttackRow], config: dict[str, Any], out: Path) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    with (out / "attacks.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(AttackRow.model_fields))
        writer.writeheader()
        writer.writerows(r.model_dump() for r in rows)
    result = {"config": config, "summary": summary(rows), "rows": [r.model_dump() for r in rows]}
    (out / "attacks.json").write_text(json.dumps(result, indent=2))
    (out / "attacks.md").write_text(markdown(rows, config))
    plot(rows, out / "attacks.png")
    return result
