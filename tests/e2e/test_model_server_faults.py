"""The model server killed in the middle of a run, with the real model and real agent processes:
restarted, the agents' retries carry the run to its answer; left down, the run ends
``model_unreachable`` with the reason, and no agent crashes."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from gaiamesh.agents.teams import agent_specs, default_agents, lineup
from gaiamesh.deploy.local import ProcessGroup, child_env, free_port, free_port_block, wait_until_answers
from gaiamesh.evaluation.audit import audit
from gaiamesh.evaluation.finish import run_and_finish
from gaiamesh.evaluation.metrics import RunMetrics
from gaiamesh.mesh.records import FrameRecord
from gaiamesh.mesh.relay import MeshNetwork
from gaiamesh.settings import Settings, load_settings
from gaiamesh.tasks import load_task

from ..conftest import small_task

pytestmark = [pytest.mark.e2e, pytest.mark.model]


class Team:
    """A model server and four agents of our own (the session's model server is never killed)."""

    def __init__(self, tmp: Path, retry_for: float) -> None:
        port = free_port()
        self.settings: Settings = load_settings(
            ollama_host=f"http://127.0.0.1:{port}", agents=default_agents(free_port_block(4)),
            workspace_root=tmp / "ws", llm_retry_for=retry_for, run_timeout=120,
        )  # fmt: skip
        self.port = port
        self.group = ProcessGroup(tmp / "logs")

    def start_model(self) -> None:
        self.group.start(
            "model-server", ["serve-model", "--host", "127.0.0.1", "--port", str(self.port)], child_env(self.settings)
        )
        wait_until_answers(
            f"{self.settings.ollama_host}/api/version", lambda: self.group.check("model-server"), 120, "model server"
        )

    def kill_model(self) -> None:
        self.group.procs["model-server"].send_signal(signal.SIGKILL)
        self.group.procs["model-server"].wait()

    def start_agents(self) -> None:
        for spec in agent_specs(self.settings):
            self.group.start(f"agent-{spec.node_id}", ["agent"],
                             child_env(self.settings, node_id=spec.node_id, tool=spec.tool, port=str(spec.port)))  # fmt: skip
        for spec in agent_specs(self.settings):  # an agent that died starting shows its log here
            name = f"agent-{spec.node_id}"
            wait_until_answers(f"http://127.0.0.1:{spec.port}/health", lambda n=name: self.group.check(n), 60, name)

    def agent_logs(self) -> str:
        return "".join((self.group.log_dir / f"agent-{s.node_id}.log").read_text() for s in agent_specs(self.settings))

    def agents_alive(self) -> None:
        for spec in agent_specs(self.settings):
            self.group.check(f"agent-{spec.node_id}")  # raises with the log's tail if one exited


@pytest.fixture
def team(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Team]:
    t = Team(tmp_path, retry_for=request.param)
    try:
        t.start_model()
        t.start_agents()
        yield t
    finally:
        t.group.stop_all()


def run(team: Team, out: Path, on_first_frame: object = None) -> RunMetrics:
    """One run of a short task through the relay in this process (the team's own model server
    has no memo: a bundled task's document would only double the model's work); ``on_first_frame``
    (a coroutine function) is started when doc_init has been delivered, and awaited before returning."""
    task = load_task(small_task(out.parent / f"task-{out.name}"))

    async def go() -> RunMetrics:
        started: list[asyncio.Task[None]] = []

        def observe(item: object) -> None:
            if isinstance(item, FrameRecord) and not started and callable(on_first_frame):
                started.append(asyncio.get_running_loop().create_task(on_first_frame()))

        metrics = await run_and_finish(MeshNetwork(team.settings, task, out, quiet=True, observer=observe, lineup=lineup(team.settings)))
        for t in started:
            await t
        return metrics

    return asyncio.run(go())


@pytest.mark.parametrize("team", [60.0], indirect=True)
def test_model_server_killed_mid_run_and_restarted_the_run_completes(team: Team, tmp_path: Path) -> None:
    async def kill_and_restart() -> None:
        team.kill_model()
        await asyncio.sleep(2.0)  # the outage, not a synchronization
        await asyncio.to_thread(team.start_model)

    metrics = run(team, tmp_path / "run", kill_and_restart)
    assert metrics.status == "ok", metrics.error
    assert metrics.prediction and metrics.token_sum > 0
    assert "model server unreachable" in team.agent_logs()  # the agents did wait for it
    assert all(a == b for _, a, b in audit(tmp_path / "run"))
    team.agents_alive()


@pytest.mark.parametrize("team", [2.0], indirect=True)
def test_model_server_left_down_ends_model_unreachable_and_agents_survive(team: Team, tmp_path: Path) -> None:
    async def kill() -> None:
        team.kill_model()

    metrics = run(team, tmp_path / "down", kill)
    assert metrics.status == "model_unreachable"
    assert metrics.error and "model server unreachable" in metrics.error and "LLM_RETRY_FOR=2" in metrics.error
    assert all(a == b for _, a, b in audit(tmp_path / "down"))
    team.agents_alive()
    # The same agents answer the next run once the model server is back.
    team.start_model()
    again = run(team, tmp_path / "again")
    assert again.status == "ok", again.error
