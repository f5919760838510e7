"""Network faults end to end: the bundled task under latency and loss, with the model held fixed.

The real model's answers come from the suite's one live recording (the ``recorded`` fixture);
``gaiamesh bench-faults --replay`` runs the task calm, under 50 ± 20 ms on every link and under
loss, with no model server at all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gaiamesh.evaluation.audit import audit
from gaiamesh.evaluation.metrics import read_log

from ..conftest import ROOT, TASKS, free_port, free_port_block, recorded_metrics

pytestmark = [pytest.mark.e2e, pytest.mark.model]


def gaiamesh(*args: str, timeout: float = 300) -> None:
    proc = subprocess.run([sys.executable, "-m", "gaiamesh", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ))  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_solar_farm_under_latency_and_loss_answers_as_calm_and_its_log_agrees(
    tmp_path: Path, recorded: Path
) -> None:
    live = recorded_metrics(recorded, "solar-farm")
    assert live["status"] == "ok"

    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "solar-farm").symlink_to(TASKS / "solar-farm")
    out = tmp_path / "faults"
    # a loss rate high enough that this seeded run surely loses copies (5 % might lose none of ~15)
    gaiamesh("bench-faults", "--tasks", str(tmp_path / "tasks"), "--protocols", "json", "--faults", "latency,loss",
             "--loss", "0.25", "--seed", "1", "--replay", str(recorded), "--ollama-host", f"http://127.0.0.1:{free_port()}",
             "--out", str(out), "--base-port", str(free_port_block(4)), "--workspaces", str(tmp_path / "ws"))  # fmt: skip
    result = json.loads((out / "faults.json").read_text())
    assert (out / "faults.md").is_file() and (out / "faults.png").stat().st_size > 0
    runs = {r["fault"]: r for r in result["runs"]}
    calm, latency, loss = runs["calm"], runs["latency"], runs["loss"]
    assert calm["status"] == "ok" and calm["prediction"] == live["prediction"]

    for run in (calm, latency, loss):
        # ok (the seed is fixed, and 8 redeliveries of one copy all lost would end it frame_lost)
        assert run["status"] == "ok", run
        assert run["prediction"] == calm["prediction"]  # the network changed, the answer did not
        assert run["audit_ok"] and all(a == b for _, a, b in audit(Path(run["out"])))
        metrics = json.loads((Path(run["out"]) / "metrics.json").read_text())
        assert metrics["backend"] == "replay" and str(metrics["token_sum"]) == live["token_sum"]

    assert not any(r.fault for r in read_log(Path(calm["out"]) / "frames.jsonl"))
    # latency: every frame the relay sent out is on the books with the delay its link added
    sent = [r for r in read_log(Path(latency["out"]) / "frames.jsonl") if r.dst]
    assert sent and all(r.fault and "latency" in r.fault.causes and set(r.fault.out_ms) == set(r.dst) for r in sent)
    assert all(30 <= ms <= 70 or "queued" in (r.fault.causes if r.fault else []) for r in sent
               for ms in (r.fault.out_ms.values() if r.fault else []))  # fmt: skip
    assert latency["wall_ms"] > calm["wall_ms"] + 4 * 30  # at least four hops, each way at least 30 ms
    # loss: each lost copy logged, and redelivered (but the final answer's: the run ended with it)
    records = read_log(Path(loss["out"]) / "frames.jsonl")
    dropped = [r for r in records if r.status == "dropped_fault"]
    assert dropped and loss["dropped"] == len(dropped) and all(r.fault and r.fault.attempt >= 1 for r in dropped)
    lost = {(r.dst[0], r.b64) for r in dropped if r.type != "data_event"}
    # a copy is redelivered FAULT_REDELIVER_AFTER (0.5 s) after its loss, unless the run ended first
    # (a CI run under load ended 0.3 ms before one was due)
    end = max(r.t_ms for r in records)
    due = {(r.dst[0], r.b64) for r in dropped if r.type != "data_event" and r.t_ms + 500 < end}
    redelivered = [(r.dst[0], r.b64) for r in records if r.status == "redelivered"]
    assert due <= set(redelivered) <= lost and len(redelivered) == len(set(redelivered))
    loss_metrics = json.loads((Path(loss["out"]) / "metrics.json").read_text())
    assert loss_metrics["bytes_tx"] == sum(r.tx_bytes for r in records)
    summary = {row["fault"]: row for row in result["summary"]}
    assert summary["loss"]["redelivered"] == len(redelivered) and summary["latency"]["retained"] == 1.0
    print(json.dumps(result["summary"], indent=1))
