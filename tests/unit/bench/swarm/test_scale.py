"""bench-swarm's figures from a level's runs (the scaling itself runs on a real swarm)."""

from __future__ import annotations

from gaiamesh.bench.swarm.scale import summarise
from gaiamesh.evaluation.metrics import RunMetrics


def run(**kw: object) -> RunMetrics:
    return RunMetrics(task_id="t", question="q?", answer="a", model="m", **kw)  # type: ignore[arg-type]


def test_a_level_counts_runs_per_minute_statuses_and_medians() -> None:
    runs = [run(status="ok", elapsed_ms=1000.0, bytes_tx=100, bytes_rx=50, decode_us_p50=40.0),
            run(status="ok", elapsed_ms=3000.0, bytes_tx=100, bytes_rx=50, decode_us_p50=60.0),
            run(status="agent_dead", elapsed_ms=2000.0, bytes_tx=10, bytes_rx=0)]  # fmt: skip
    level = summarise(2, 30.0, runs)
    assert (level.replicas, level.runs, level.ok, level.runs_per_min) == (2, 3, 2, 6.0)
    assert level.statuses == {"ok": 2, "agent_dead": 1}
    assert (level.elapsed_ms_p50, level.decode_us_p50, level.bytes_per_run_p50) == (2000.0, 50.0, 150)
