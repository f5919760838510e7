"""``gaiamesh bench-concurrency``: what ``MAX_CONCURRENT_RUNS`` the model server sustains.

For each level, a fresh ``gaiamesh serve`` over the same agents and model server takes the
same batch of runs at once; the results file gives the batch's wall time, runs per minute and
each run's time from submission to its end, side by side.
"""

from __future__ import annotations

import json
import secrets
import statistics
import time
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table
from websockets.sync.client import connect

from ...agents.teams import default_agents
from ...deploy.local import (
    ProcessGroup,
    child_env,
    free_port,
    free_port_block,
    model_server,
    wait_until_answers,
)
from ...mesh.admission import new_token
from ...settings import Settings

console = Console()


def _serve(settings: Settings, group: ProcessGroup, name: str, concurrency: int, out: Path, key: str) -> str:
    port = free_port()
    env = child_env(
        settings, service_port=str(port), max_concurrent_runs=str(concurrency), out_dir=str(out),
        gaiamesh_access_key=key, gaiamesh_session_secret=secrets.token_urlsafe(32), max_queued_runs="1000",
    )  # fmt: skip
    group.start(name, ["serve"], env)
    url = f"http://127.0.0.1:{port}"
    wait_until_answers(f"{url}/api/health", lambda: group.check(name), 60, "the network service")
    return url


def batch(url: str, key: str, tasks: list[str]) -> dict[str, Any]:
    """Submit every task at once; wait for all; the batch's figures."""
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
        t0 = time.time()
        ids = [http.post("/api/runs", json={"task": t}).json()["id"] for t in tasks]
        for run_id in ids:  # each stream replays from the start, so the order of waiting is free
            with connect(url.replace("http", "ws") + f"/api/runs/{run_id}/events", additional_headers=headers) as ws:
                for _ in ws:
                    pass
        runs = [http.get(f"/api/runs/{i}").json() for i in ids]
    wall = max(r["finished"] for r in runs) - t0
    latency = [r["finished"] - r["created"] for r in runs]
    return {
        "runs": len(runs),
        "ok": sum(r["metrics"] is not None and r["metrics"]["status"] == "ok" for r in runs),
        "wall_s": round(wall, 2),
        "runs_per_min": round(60 * len(runs) / wall, 2),
        "median_run_s": round(statistics.median(latency), 2),
        "max_run_s": round(max(latency), 2),
        "quality": _mean([r["metrics"]["quality_score"] for r in runs if r["metrics"]]),
    }


def _mean(scores: list[float | None]) -> float | None:
    """The mean of the scored runs' quality (a run without a gold answer has none)."""
    known = [s for s in scores if s is not None]
    return round(statistics.fmean(known), 3) if known else None


def run_concurrency_bench(settings: Settings, levels: list[int], tasks: list[str], out: Path) -> dict[str, Any]:
    """Every level on the same agents and model server; writes concurrency.json and .md."""
    out.mkdir(parents=True, exist_ok=True)
    settings = settings.model_copy(update={"agents": default_agents(free_port_block(4)), "mesh_token": new_token()})
    group = ProcessGroup(out / "logs")
    key = secrets.token_urlsafe(16)
    results: dict[str, Any] = {"tasks": tasks, "levels": {}}
    try:
        with model_server(settings, group):
            group.start_team(settings)
            for level in levels:
                with console.status(f"MAX_CONCURRENT_RUNS={level}: {len(tasks)} runs at once ..."):
                    url = _serve(settings, group, f"serve-{level}", level, out / f"service-{level}", key)
                    results["levels"][str(level)] = batch(url, key, tasks)
                    proc = group.procs.pop(f"serve-{level}")
                    proc.terminate()
                    proc.wait(timeout=30)
    finally:
        group.stop_all()
    (out / "concurrency.json").write_text(json.dumps(results, indent=2))
    table = Table(title=f"MAX_CONCURRENT_RUNS: {len(tasks)} runs submitted at once")
    cols = ["runs", "ok", "wall_s", "runs_per_min", "median_run_s", "max_run_s", "quality"]
    for col in ["level", *cols]:
        table.add_column(col, justify="right")
    lines = ["| MAX_CONCURRENT_RUNS | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for level, r in results["levels"].items():
        table.add_row(level, *(str(r[c]) for c in cols))
        lines.append(f"| {level} | " + " | ".join(str(r[c]) for c in cols) + " |")
    (out / "concurrency.md").write_text("\n".join(lines) + "\n")
    console.print(table)
    return results
