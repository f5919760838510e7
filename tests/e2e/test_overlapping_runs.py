"""Two runs at once through the same four agent processes, on the real model's recorded answers
(a replay: a model call one run's agent made for the other run's task would have no record and
fail): each gets the answer and the numbers it gets alone, and nothing of the other run."""

from __future__ import annotations

import asyncio
import base64
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from gaiamesh.agents.teams import agent_specs, default_agents, lineup
from gaiamesh.deploy.local import ProcessGroup, child_env
from gaiamesh.evaluation.audit import audit
from gaiamesh.evaluation.finish import run_and_finish
from gaiamesh.evaluation.metrics import RunMetrics, read_log
from gaiamesh.mesh.relay import MeshNetwork
from gaiamesh.settings import load_settings
from gaiamesh.tasks import load_task

from ..conftest import TASKS, free_port_block

pytestmark = [pytest.mark.e2e, pytest.mark.model]

TASK_IDS = ["solar-farm", "mountain-observatory"]  # a single-fact and a two-fact task


def frames_without_timing(run_dir: Path) -> list[dict[str, Any]]:
    """Each frame's route and decoded packet, minus the run's id (the model's time is not on the wire)."""
    out = []
    for r in read_log(run_dir / "frames.jsonl"):
        packet = json.loads(base64.b64decode(r.b64))
        packet.pop("run_id")
        out.append({"src": r.src, "dst": r.dst, "status": r.status, "packet": packet})
    return out


def timing_bytes(run_dir: Path) -> int:
    """Bytes on the wire spent on the ``run_id`` value (it differs run to run)."""
    total = 0
    for r in read_log(run_dir / "frames.jsonl"):
        packet = json.loads(base64.b64decode(r.b64))
        size = len(packet["run_id"])
        total += size * (len(r.dst) + (1 if r.rx_bytes else 0))
    return total


def test_two_overlapping_runs_match_their_runs_alone(tmp_path: Path, recorded: Path) -> None:
    assert (TASKS / TASK_IDS[1]).is_dir(), "the second bundled task is missing"
    settings = load_settings(
        llm_backend="replay", replay_from=recorded, agents=default_agents(free_port_block(4)),
        workspace_root=tmp_path / "ws",
    )
    tasks = [load_task(TASKS / t) for t in TASK_IDS]
    group = ProcessGroup(tmp_path / "logs")
    for spec in agent_specs(settings):
        group.start(
            f"agent-{spec.node_id}",
            ["agent"],
            child_env(settings, node_id=spec.node_id, tool=spec.tool, port=str(spec.port)),
        )

    async def runs(label: str, together: bool) -> list[RunMetrics]:
        nets = [MeshNetwork(settings, t, tmp_path / label / t.task_id, reporter=lambda _: None, lineup=lineup(settings)) for t in tasks]
        if together:
            return list(await asyncio.gather(*(run_and_finish(n) for n in nets)))
        return [await run_and_finish(n) for n in nets]

    try:
        alone = asyncio.run(runs("alone", together=False))
        both = asyncio.run(runs("together", together=True))
    finally:
        group.stop_all()

    for task, a, b in zip(tasks, alone, both, strict=True):
        assert a.status == b.status == "ok", (a.error, b.error)
        assert a.run_id != b.run_id
        assert (b.prediction, b.quality_score, b.exact_match) == (a.prediction, a.quality_score, a.exact_match)
        for counter in ("pkt_cnt", "token_sum", "rejected_cnt", "header_overhead", "frames"):
            assert getattr(b, counter) == getattr(a, counter), counter
        da, db = tmp_path / "alone" / task.task_id, tmp_path / "together" / task.task_id
        assert frames_without_timing(db) == frames_without_timing(da)
        # the byte counters differ only by the run id
        assert b.bytes_tx + b.bytes_rx - timing_bytes(db) == a.bytes_tx + a.bytes_rx - timing_bytes(da)
        for run_dir in (da, db):
            assert all(reported == recomputed for _, reported, recomputed in audit(run_dir))
        # the run's archive holds its own workspace files, about its own task only
        with tarfile.open(db / "run_artifacts.tar.gz") as tar:
            for node in "0123":
                memory = json.load(tar.extractfile(f"workspaces/{node}/memory.json"))  # type: ignore[arg-type]
                assert memory["run_id"] == b.run_id and memory["question"] == task.question
                log = tar.extractfile(f"workspaces/{node}/agent.log").read().decode()  # type: ignore[union-attr]
                assert all(json.loads(x)["packet"]["run_id"] == b.run_id for x in log.splitlines())
            assert json.load(tar.extractfile("workspaces/3/memory.json"))["answer"] == b.prediction  # type: ignore[arg-type]
