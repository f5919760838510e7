"""A run's row of ``results.csv`` (one column per field of ``metrics.json``), rows read back from
folders of runs, and the console every part of the comparison prints to."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from rich.console import Console

from ...evaluation.metrics import RunMetrics, WireLayers

# one CSV column per field of metrics.json, and the share of the answer's decisions the model made
# and, on the native wire, its layers below the packet (empty for a run on the relay's WebSocket)
LAYERS = list(WireLayers.model_fields)
COLUMNS = ["repeat", *RunMetrics.columns(), *LAYERS, "model_share", "order", "load_1m", "cpu_other", "steal_pct",
           "containers", "contended"]  # fmt: skip
BASELINE = "baseline"
_REPEAT = re.compile(r"^.+-(\d{1,4})$")  # <task id>-<repeat>, as `make bench` names a run

console = Console()
if not console.is_terminal:
    console.width = 150  # logs and CI: keep the summary table readable


def csv_row(repeat: int, m: RunMetrics) -> dict[str, Any]:
    """One CSV row; baseline runs are grouped under the protocol name ``baseline``."""
    row = m.model_dump(exclude={"agents", "layers"}) | (m.layers.model_dump() if m.layers else {})
    made = list(m.made_by.values())
    row["model_share"] = round(made.count("model") / len(made), 3) if made else None  # which the model made
    protocol = BASELINE if m.mode == BASELINE else m.protocol
    return {c: "" if row.get(c) is None else row[c] for c in COLUMNS} | {"protocol": protocol, "repeat": repeat}


def collect(root: Path) -> list[dict[str, Any]]:
    """Rows from every ``metrics.json`` under ``root`` (for runs made on the compose stack).
    A run found twice (the same ``run_id``: ``gaiamesh submit --out`` saved a copy beside the
    service's own ``runs/<run id>/``) counts once; the console says how many copies were skipped."""
    rows = []
    seen: Counter[tuple[str | None, ...]] = Counter()
    runs: set[str] = set()
    copies = 0
    for path in sorted(root.rglob("metrics.json")):
        metrics = RunMetrics.read(path)
        if metrics.run_id and metrics.run_id in runs:
            copies += 1
            continue
        runs.add(metrics.run_id)
        # A run's repeat number: `make bench` names its folders <task>-<repeat>; any other folder
        # (the service's runs/<run id>/, a user's own) counts the runs of each task and variant.
        variant = (metrics.task_id, metrics.mode, metrics.strategy, metrics.protocol, metrics.transport, metrics.ablated)
        seen[variant] += 1
        named = _REPEAT.match(path.parent.name)
        rows.append(csv_row(int(named.group(1)) if named else seen[variant], metrics))
    if copies:
        console.print(f"skipped {copies} duplicate run{'s' if copies > 1 else ''}: "
                      "the same run_id, already counted from another folder")
    return rows
