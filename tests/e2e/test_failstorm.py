"""A short fail-storm on the real model's recorded answers, replayed at the pace they were made
(so runs last as long as live ones): agent processes killed with SIGKILL and restarted while a
batch runs; every run ends with a status, nothing is lost, the counters agree, and every storm
answer is its calm answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gaiamesh.bench.storms.failstorm import Storm, run_failstorm
from gaiamesh.settings import load_settings
from gaiamesh.tasks import load_task

from ..conftest import TASKS

pytestmark = [pytest.mark.e2e, pytest.mark.model]


def test_a_short_storm_loses_nothing_and_restarted_agents_come_back(tmp_path: Path, recorded: Path) -> None:
    settings = load_settings(llm_backend="replay", replay_from=recorded, replay_pace="recorded",
                             workspace_root=tmp_path / "ws", run_timeout=120)  # fmt: skip
    tasks = [load_task(TASKS / name) for name in ("solar-farm", "glass-museum")]
    # One agent every 2.5 s: a tool's two agents can both be down for a moment, which the grace
    # covers. (Two every 3 s can keep one tool down past the grace; the run then ends
    # agent_dead, saying so: a precise status, but not what this test is about.)
    result = run_failstorm(settings, tasks, tmp_path / "out", Storm(kill=1, every=2.5, seed=3, grace=10.0), down=1.0)
    s = result["summary"]
    assert s["kills"] >= 2 and s["storm_runs"] == 2
    assert {r["status"] for r in result["runs"]} == {"ok"}, result["runs"]  # none hangs, none fails
    assert s["answers_changed"] == {}  # the model is deterministic: a storm costs, it never changes answers
    assert s["frames_lost"] == 0 and result["audits_ok"]
    assert s["retention"] is not None and s["retention"] >= 0.99
    killed_in_runs = [k for k in result["kills"] if k["detect_s"] is not None]
    assert killed_in_runs and all(k["detect_s"] < 2.0 for k in killed_in_runs)  # the relay noticed each
    assert any(k["back_s"] is not None for k in result["kills"])  # a restarted agent carried traffic again
    for name in ("failstorm.json", "failstorm.md", "failstorm.png"):
        assert (tmp_path / "out" / name).stat().st_size > 0
    assert json.loads((tmp_path / "out" / "failstorm.json").read_text())["config"]["rejoin_grace_s"] == 10.0
