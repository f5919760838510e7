"""A run of the real model, replayed from its archive with no model server (LLM_BACKEND=replay)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import ROOT, TASKS, free_port, free_port_block

pytestmark = [pytest.mark.e2e, pytest.mark.model]


def run(task: Path, out: Path, *args: str, env: dict[str, str] | None = None) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, "-m", "gaiamesh", "run", str(task), "--out", str(out), "--base-port", str(free_port_block(4)),
         "--workspaces", str(out.parent / f"ws-{out.name}"), *args],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return dict(json.loads((out / "metrics.json").read_text()))


def test_a_replayed_run_answers_and_counts_as_the_live_one(tmp_path: Path, model_server: str) -> None:
    task = TASKS / "solar-farm"
    live = run(task, tmp_path / "live", "--ollama-host", model_server)
    nowhere = f"http://127.0.0.1:{free_port()}"  # no model server: every answer comes from the record
    replay = {"LLM_BACKEND": "replay", "REPLAY_FROM": str(tmp_path / "live")}
    again = run(task, tmp_path / "again", "--ollama-host", nowhere, env=replay)
    assert again["backend"] == "replay" and again["status"] == "ok"
    for field in ("prediction", "token_sum", "llm_ms", "bytes_tx", "bytes_rx", "pkt_cnt", "header_overhead"):
        assert again[field] == live[field], field
    # under another protocol, the recorded answers: only the wire differs
    other = run(task, tmp_path / "other", "--ollama-host", nowhere, "--protocol", "compressed", env=replay)
    assert other["prediction"] == live["prediction"] and other["token_sum"] == live["token_sum"]
    assert other["bytes_tx"] != live["bytes_tx"]


def test_a_replayed_bench_reproduces_every_run_to_the_byte(tmp_path: Path, recorded: Path) -> None:
    # The suite's live recording is a bench of the RECORDED tasks under json, each with the
    # model's own times (a server that computes every request: no memo). Its replay answers every
    # run from the record: under json the same runs to the byte (bytes must not depend on which
    # time came back); under a protocol the live bench did not run, the recorded answers with
    # bytes of their own.
    live = {r["task_id"]: r for r in csv.DictReader((recorded / "results.csv").open())}
    (tmp_path / "tasks").mkdir()
    for task_id in live:
        (tmp_path / "tasks" / task_id).symlink_to(TASKS / task_id)
    proc = subprocess.run(
        [sys.executable, "-m", "gaiamesh", "bench", "--tasks", str(tmp_path / "tasks"), "--repeat", "1",
         "--out", str(tmp_path / "again"), "--workspaces", str(tmp_path / "ws"), "--protocols", "json,a2a",
         "--replay", str(recorded), "--ollama-host", f"http://127.0.0.1:{free_port()}"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    again = {(r["protocol"], r["task_id"]): r for r in csv.DictReader((tmp_path / "again" / "results.csv").open())}
    assert len(live) == 3 and len(again) == 2 * len(live)
    for task_id, was in live.items():
        same, other = again[("json", task_id)], again[("a2a", task_id)]
        assert was["backend"] == "ollama" and same["backend"] == other["backend"] == "replay"
        for field in ("prediction", "token_sum", "bytes_tx", "bytes_rx", "pkt_cnt", "header_overhead"):
            assert same[field] == was[field], (task_id, field)
        assert float(was["llm_ms"]) > 0 and float(same["llm_ms"]) > 0
        assert other["prediction"] == was["prediction"] and other["bytes_tx"] != was["bytes_tx"]
