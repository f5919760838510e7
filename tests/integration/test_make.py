"""The Makefile's own targets, run as CI runs them (root), each on a compose project of its own:
`make bench` narrowed to one task (record + replay, and LIVE=1), its port check, a stack that does not become
healthy, and `make down` whatever profiles were started. Each leaves nothing running."""

from __future__ import annotations

import csv
import json
import os
import socket
import subprocess
import uuid
from pathlib import Path

import pytest

from ..conftest import ROOT, free_port

pytestmark = pytest.mark.integration


def containers(project: str) -> list[str]:
    ps = subprocess.run(["docker", "ps", "-a", "-q", "--filter", f"label=com.docker.compose.project={project}"],
                        capture_output=True, text=True, check=True)  # fmt: skip
    return ps.stdout.split()


def free_prefix() -> str:
    """A HOST_PORT_PREFIX whose ports (PP00-PP07) are all free."""
    for prefix in range(31, 65):
        try:
            for n in range(8):
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", int(f"{prefix}0{n}")))
        except OSError:
            continue
        return str(prefix)
    raise RuntimeError("no free port prefix")


def bench_env(tmp: Path, **extra: str) -> dict[str, str]:
    # (not the compose suite's MODEL_MEMO: `make bench` as a user runs it)
    env = {k: v for k, v in os.environ.items() if k not in ("COMPOSE_FILE", "COMPOSE_PROFILES", "MODEL_MEMO")}
    return {**env, "COMPOSE_PROJECT_NAME": f"gaiamesh-bench-it-{uuid.uuid4().hex[:6]}", "OUT": str(tmp / "bench"),
            "BENCH_SERVICE_PORT": str(free_port()), "BENCH_HOST_PORT_PREFIX": free_prefix(), "PROTOCOLS": "json",
            "LIMIT": "1", "REPEAT": "1", **extra}  # fmt: skip


def read_rows(out: Path) -> list[dict[str, str]]:
    with (out / "results.csv").open() as f:
        return list(csv.DictReader(f))


LOAD_COLUMNS = ("load_1m", "cpu_other", "steal_pct", "containers", "contended")


def test_make_bench_records_the_model_once_and_replays_it_under_every_protocol(tmp_path: Path) -> None:
    env = bench_env(tmp_path, PROTOCOLS="json,a2a", SEED="0")
    proc = subprocess.run(["make", "bench"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    out = tmp_path / "bench"
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    said = next((line for line in proc.stdout.splitlines() if line.startswith("record + replay: ")), "")
    assert said.startswith("record + replay: 1 live records") and said.endswith(" min)"), proc.stdout[:500]
    records = sorted((out / "records").iterdir())
    assert len(records) == 1 and (records[0] / "run_artifacts.tar.gz").is_file()
    recorded = json.loads((records[0] / "metrics.json").read_text())
    assert recorded["backend"] == "ollama" and recorded["protocol"] == "json" and recorded["status"] == "ok"
    rows = read_rows(out)
    assert sorted(r["protocol"] for r in rows) == ["a2a", "json"]
    for row in rows:  # the model's answers are the record's: only the wire differs
        assert row["backend"] == "replay" and row["status"] == "ok", row
        assert row["task_id"] == recorded["task_id"] and row["prediction"] == recorded["prediction"], row
        # the machine's load beside it; a replayed run (ms long) is too short for cpu_other to be judged
        assert all(row[c] != "" for c in LOAD_COLUMNS if c != "cpu_other"), row
        assert row["cpu_other"] != "" or row["contended"] == "False", row
    # the replay under json is the recorded run to the byte: the model's time is not on the wire
    same = next(r for r in rows if r["protocol"] == "json")
    for field in ("bytes_tx", "bytes_rx", "pkt_cnt", "header_overhead", "token_sum"):
        assert int(same[field]) == recorded[field], field
    # one warm-up run, not counted, then both protocols of the task back to back
    assert len(list((out / "warm-up").rglob("metrics.json"))) == 1
    assert sorted(int(r["order"]) for r in rows) == [1, 2]
    summary = (out / "summary.md").read_text()
    assert "record + replay" in summary and str(out / "records") in summary, summary[:1500]
    assert "## Load during the runs" in summary and "Not measured" not in summary
    assert {p.name for p in out.iterdir()} >= {"summary.md", "comparison.png", "bench-runs"}
    for protocol in ("json", "a2a"):
        run = next((out / "bench-runs" / protocol).iterdir())
        assert (run / "metrics.json").is_file() and (run / "run_artifacts.tar.gz").is_file()
    assert containers(env["COMPOSE_PROJECT_NAME"]) == []


# The record + replay test above runs the same script, stack, model and bench command; LIVE=1
# only skips the recording (a stack of its own again: 45 s here).
@pytest.mark.full
def test_live_make_bench_says_its_cost_and_runs_the_model_under_each_protocol(tmp_path: Path) -> None:
    env = bench_env(tmp_path, LIVE="1")
    proc = subprocess.run(["make", "bench"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    out = tmp_path / "bench"
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    said = next((line for line in proc.stdout.splitlines() if line.startswith("LIVE=1: ")), "")
    assert said.startswith("LIVE=1: 1 live runs + 1 warm-up") and " min" in said, proc.stdout[:500]
    assert "[  1/1] json" in proc.stdout and "elapsed, about 0:00 left" in proc.stdout
    rows = read_rows(out)
    assert len(rows) == 1 and rows[0]["status"] == "ok" and rows[0]["backend"] == "ollama", rows
    assert rows[0]["order"] == "1" and all(rows[0][c] != "" for c in LOAD_COLUMNS), rows
    assert not (out / "records").exists()
    summary = (out / "summary.md").read_text()
    assert "**live**" in summary and "record + replay" not in summary
    run = next((out / "bench-runs" / "json").iterdir())
    assert (run / "metrics.json").is_file() and (run / "run_artifacts.tar.gz").is_file()
    if os.getuid() == 0:  # the folders the containers write belong to their user, not to root
        owner = subprocess.run([ROOT / "scripts" / "owner.sh"], capture_output=True, text=True).stdout.strip()
        assert f"{out.stat().st_uid}:{out.stat().st_gid}" == owner
    assert containers(env["COMPOSE_PROJECT_NAME"]) == []


def test_make_bench_says_which_port_is_taken_and_how_to_move_it(tmp_path: Path) -> None:
    env = bench_env(tmp_path)
    with socket.socket() as held:
        held.bind(("127.0.0.1", int(env["BENCH_SERVICE_PORT"])))
        held.listen()
        proc = subprocess.run([ROOT / "scripts" / "bench-compose.sh"], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=300)  # fmt: skip
    assert proc.returncode != 0
    assert f"port 127.0.0.1:{env['BENCH_SERVICE_PORT']} is taken" in proc.stderr
    assert "set BENCH_SERVICE_PORT" in proc.stderr and "address already in use" not in proc.stderr
    assert containers(env["COMPOSE_PROJECT_NAME"]) == []


def test_a_stack_that_does_not_become_healthy_shows_the_failing_containers_log(tmp_path: Path) -> None:
    env = bench_env(tmp_path, GAIAMESH_SESSION_SECRET="too-short")  # the network service refuses to start
    proc = subprocess.run([ROOT / "scripts" / "bench-compose.sh"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert proc.returncode != 0
    assert "-- network: its last log lines --" in proc.stderr
    assert "GAIAMESH_SESSION_SECRET must be at least 32 characters" in proc.stderr
    assert containers(env["COMPOSE_PROJECT_NAME"]) == []


def test_make_down_stops_every_profile(tmp_path: Path) -> None:
    project = f"gaiamesh-down-it-{uuid.uuid4().hex[:6]}"
    env = {**{k: v for k, v in os.environ.items() if k != "COMPOSE_PROFILES"}, "COMPOSE_PROJECT_NAME": project,
           "HOST_PORT_PREFIX": free_prefix(), "SERVICE_PORT": str(free_port())}  # fmt: skip
    try:
        up = subprocess.run(["docker", "compose", "--profile", "orchestrated", "--profile", "wide", "up", "-d",
                             "--wait", "web", "agent-search-2"], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=300)  # fmt: skip
        assert up.returncode == 0, up.stderr
        assert len(containers(project)) == 3  # web (orchestrated), agent-search-2 (wide) and the model server
        down = subprocess.run(["make", "down"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert down.returncode == 0, down.stderr
        assert containers(project) == [], down.stderr
        networks = subprocess.run(["docker", "network", "ls", "-q", "--filter", f"name={project}"],
                                  capture_output=True, text=True).stdout  # fmt: skip
        assert networks.strip() == "" and "still in use" not in down.stderr
    finally:
        subprocess.run(["docker", "compose", "-p", project, "--profile", "orchestrated", "--profile", "wide", "down",
                        "--remove-orphans", "-t", "2"], cwd=ROOT, env=env, capture_output=True)  # fmt: skip
