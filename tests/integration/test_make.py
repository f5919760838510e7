"""The Makefile's own targets, run as CI runs them (root), each on a compose project of its own:
`make bench` narrowed to one protocol and one task, its port check, a stack that does not become
healthy, and `make down` whatever profiles were started. Each leaves nothing running."""

from __future__ import annotations

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
    env = {k: v for k, v in os.environ.items() if k not in ("COMPOSE_FILE", "COMPOSE_PROFILES")}
    return {**env, "COMPOSE_PROJECT_NAME": f"gaiamesh-bench-it-{uuid.uuid4().hex[:6]}", "OUT": str(tmp / "bench"),
            "BENCH_SERVICE_PORT": str(free_port()), "BENCH_HOST_PORT_PREFIX": free_prefix(), "PROTOCOLS": "json",
            "LIMIT": "1", "REPEAT": "1", **extra}  # fmt: skip


def test_make_bench_as_root_on_one_protocol_and_one_task(tmp_path: Path) -> None:
    env = bench_env(tmp_path)
    proc = subprocess.run(["make", "bench"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    out = tmp_path / "bench"
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "[  1/1] json" in proc.stdout and "elapsed, about 0:00 left" in proc.stdout
    rows = (out / "results.csv").read_text().splitlines()
    assert len(rows) == 2 and ",ok," in rows[1], rows
    run = next((out / "bench-runs" / "json").iterdir())
    assert (run / "metrics.json").is_file() and (run / "run_artifacts.tar.gz").is_file()
    assert {p.name for p in out.iterdir()} >= {"summary.md", "comparison.png", "bench-runs"}
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
