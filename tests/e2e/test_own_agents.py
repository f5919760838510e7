"""A local command beside agents it did not start (a compose stack's, another bench's): it runs
on agents of its own, or stops at once saying which port is held, by whom, and what moves it;
it never reports a run made by the other agents (issue 44). The other mesh here is a team of
real agent processes with a mesh token of its own, as `make up` leaves one running."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gaiamesh.agents.teams import default_agents
from gaiamesh.deploy.local import ProcessGroup, wait_until_answers
from gaiamesh.settings import load_settings

from ..conftest import ROOT, TASKS, free_port_block, replayed

pytestmark = [pytest.mark.e2e]


@pytest.fixture
def other_stack(recorded: Path, tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """Four agents of another mesh (their own token) on a block of ports: (base port, workspaces)."""
    base = free_port_block(4)
    settings = load_settings(agents=default_agents(base), workspace_root=tmp_path / "stack-ws", mesh_token="the-stacks",
                             llm_backend="replay", replay_from=recorded)  # fmt: skip
    group = ProcessGroup(tmp_path / "stack-logs")
    group.start_team(settings)
    try:
        for i in range(4):
            wait_until_answers(f"http://127.0.0.1:{base + i}/health", lambda: None, 60, "the other stack's agent")
        yield base, tmp_path / "stack-ws"
    finally:
        group.stop_all()


def gaiamesh(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gaiamesh", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env={**os.environ, **env})  # fmt: skip


def runs_in(workspaces: Path) -> list[Path]:
    """Run folders the other stack's agents made (one per run they worked for)."""
    return [p for p in workspaces.glob("*/*") if p.is_dir()]


def test_a_run_on_the_stacks_ports_stops_at_once_naming_the_port(
    other_stack: tuple[int, Path], recorded: Path, tmp_path: Path
) -> None:
    base, stack_ws = other_stack
    started = time.monotonic()
    proc = gaiamesh("run", str(TASKS / "solar-farm"), "--base-port", str(base), "--out", str(tmp_path / "run"),
                    "--workspaces", str(tmp_path / "ws"), env=replayed(recorded))  # fmt: skip
    assert proc.returncode != 0
    assert f"port 127.0.0.1:{base} is held by" in proc.stderr and "--base-port" in proc.stderr
    assert time.monotonic() - started < 30  # at once: not after CONNECT_TIMEOUT or RUN_TIMEOUT
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())["status"] != "ok"
    # AGENTS that name the stack's ports, as a user's .env might: the same, never their run
    agents = default_agents(base)
    proc = gaiamesh("run", str(TASKS / "solar-farm"), "--out", str(tmp_path / "run2"), "--workspaces",
                    str(tmp_path / "ws"), env={**replayed(recorded), "AGENTS": agents})  # fmt: skip
    assert proc.returncode != 0 and f"port 127.0.0.1:{base} is held by" in proc.stderr
    assert runs_in(stack_ws) == []  # the other stack's agents worked for no run of ours


def test_a_bench_beside_the_stack_runs_on_its_own_agents(
    other_stack: tuple[int, Path], recorded: Path, tmp_path: Path
) -> None:
    _, stack_ws = other_stack
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "solar-farm").symlink_to(TASKS / "solar-farm")
    proc = gaiamesh("bench", "--tasks", str(tmp_path / "tasks"), "--protocols", "json,signed", "--repeat", "1",
                    "--replay", str(recorded), "--out", str(tmp_path / "bench"), "--workspaces", str(tmp_path / "ws"),
                    env=replayed(recorded))  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = list(csv.DictReader((tmp_path / "bench" / "results.csv").open()))
    assert {r["protocol"] for r in rows} == {"json", "signed"}
    assert all(r["status"] == "ok" and r["backend"] == "replay" for r in rows)
    assert runs_in(stack_ws) == []  # none of its runs reached the other stack's agents
    assert len(runs_in(tmp_path / "ws")) >= 4 * 3  # its own four agents: two runs and the warm-up
