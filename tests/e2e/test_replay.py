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


def test_a_replayed_bench_reproduces_every_run_to_the_byte(tmp_path: Path, live_model_server: str) -> None:
    # The live bench runs two protocols, each with the model's own times (a server that computes
    # every request: no memo); the replay answers both from the first record of each call. Bytes
    # must not depend on which time came back. A third protocol, which the live bench did not run,
    # gets the recorded answers and bytes of its own.
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "mountain-observatory").symlink_to(TASKS / "mountain-observatory")

    def bench(out: str, *args: str) -> dict[str, dict[str, str]]:
        proc = subprocess.run(
            [sys.executable, "-m", "gaiamesh", "bench", "--tasks", str(tmp_path / "tasks"), "--repeat", "1",
             "--out", str(tmp_path / out), "--workspaces", str(tmp_path / f"ws-{out}"), *args],
            cwd=ROOT, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return {r["protocol"]: r for r in csv.DictReader((tmp_path / out / "results.csv").open())}

    live = bench("live", "--protocols", "json,a2a", "--ollama-host", live_model_server)
    again = bench("again", "--protocols", "json,a2a,binary", "--replay", str(tmp_path / "live"),
                  "--ollama-host", f"http://127.0.0.1:{free_port()}")  # fmt: skip
    for protocol in ("json", "a2a"):
        assert again[protocol]["backend"] == "replay" and live[protocol]["backend"] == "ollama"
        for field in ("prediction", "token_sum", "bytes_tx", "bytes_rx", "pkt_cnt", "header_overhead"):
            assert again[protocol][field] == live[protocol][field], (protocol, field)
        assert float(live[protocol]["llm_ms"]) > 0 and float(again[protocol]["llm_ms"]) > 0
    other = again["binary"]
    assert other["backend"] == "replay" and other["prediction"] == live["json"]["prediction"]
    assert other["bytes_tx"] != live["json"]["bytes_tx"]
