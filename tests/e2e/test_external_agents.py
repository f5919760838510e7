"""Agents written by someone else as members of a team (issue 62, item 3): an MCP server and an
A2A agent made only in their SDKs' own examples' style (``outside_mcp_server.py``,
``outside_a2a_server.py``, each its own process on a free loopback port), named in AGENTS by
protocol and URL. The team's own agents are real MeshAgents on a fast fake model (the model is
not under test); the relay reaches the outside agents with their SDKs' clients through its
counting tap."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gaiamesh.agents.teams import lineup
from gaiamesh.evaluation.finish import run_and_finish
from gaiamesh.mesh.relay import MeshNetwork
from gaiamesh.tasks import load_task

from ..conftest import TASKS, free_port, free_port_block
from ..unit.mesh.test_relay import mesh, settings_for

pytestmark = [pytest.mark.e2e]
HERE = Path(__file__).parent
TEAM = ["search", "extract", "triple"]  # the team's own; the answer stage is the outside agent


@contextlib.contextmanager
def outside(script: str, tmp: Path) -> Iterator[int]:
    """The outside agent ``script`` running on a free loopback port, until the test ends."""
    port = free_port()
    log = (tmp / f"{script}.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, str(HERE / script), str(port)], stdout=log, stderr=subprocess.STDOUT
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"{script} exited: {(tmp / f'{script}.log').read_text()}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
            assert time.monotonic() < deadline, f"{script} did not listen on {port}"
            time.sleep(0.1)  # polling a child process for readiness: it gives no other signal
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


async def _run(tmp: Path, agents: str, **kw: object) -> dict[str, object]:
    base = free_port_block(3)
    s = settings_for(tmp, base, TEAM, **kw)
    s = s.model_copy(update={"agents": f"{s.agents},3={agents}"})
    async with mesh(s):
        metrics = await run_and_finish(MeshNetwork(
            s, load_task(TASKS / "solar-farm"), tmp / "out", reporter=lambda _: None, lineup=lineup(s)
        ))  # fmt: skip
    return metrics.model_dump()


@pytest.mark.parametrize(
    ("script", "entry", "kw"),
    [
        ("outside_mcp_server.py", "reason@mcp+http://127.0.0.1:{port}/mcp#answer", {}),
        (
            "outside_a2a_server.py",
            "reason@a2a+http://127.0.0.1:{port}/",
            {"protocol": "a2a", "transport": "native"},
        ),
    ],
    ids=["mcp-on-the-relays-wire", "a2a-beside-a-native-a2a-team"],
)
async def test_an_outside_agent_answers_for_the_team_and_its_bytes_are_counted(
    tmp_path: Path, script: str, entry: str, kw: dict[str, object]
) -> None:
    question = load_task(TASKS / "solar-farm").question
    with outside(script, tmp_path) as port:
        m = await _run(tmp_path, entry.format(port=port), **kw)
    assert m["status"] == "ok", m["error"]
    prediction = str(m["prediction"])
    if script.startswith("outside_mcp"):  # the question line and every fact reached the tool
        assert prediction.startswith(f"mcp answers {question!r} from ") and not prediction.endswith(
            " 0 facts"
        )
    else:
        assert prediction == f"a2a answers {'Question: ' + question!r} without a document"
        assert m["transport"] == "native" and m["layers"] is not None  # the team kept its own wire
    agents = m["agents"]
    assert isinstance(agents, dict)
    reason = agents["3"]
    assert reason["tool"] == "reason" and reason["pkts_sent"] == 1 and reason["bytes_sent"] > 0
    assert reason["pkts_received"] >= 1 and reason["bytes_received"] > 0
    wire = m["external_layers"]
    assert isinstance(wire, dict), m
    # Counted at the tap: the protocol's first requests and the one question, HTTP and bodies.
    assert wire["requests"] >= 2 and wire["connections"] >= 1 and wire["refused"] == 0
    assert wire["http_tx"] > wire["body_tx"] > len(question) and wire["http_rx"] > wire["body_rx"] > len(
        prediction
    )


async def test_an_outside_agent_unreachable_ends_the_run_connect_failed_naming_it(tmp_path: Path) -> None:
    m = await _run(tmp_path, f"reason@a2a+http://127.0.0.1:{free_port()}/", connect_timeout=1.0)
    assert m["status"] == "connect_failed"
    assert "external agent 3 (reason)" in str(m["error"]) and "no agent card" in str(m["error"])


async def test_an_outside_worker_answers_the_orchestrators_subtask_with_the_document(tmp_path: Path) -> None:
    """The orchestrated strategy's research worker is the outside A2A agent: it gets the sub-task
    as text with the document it read, and its text is the sub-task's result the plan answers with."""
    with outside("outside_a2a_server.py", tmp_path) as port:
        s = settings_for(tmp_path, free_port_block(2), ["orchestrator", "utility"], strategy="orchestrated")
        s = s.model_copy(update={"agents": f"{s.agents},2=research@a2a+http://127.0.0.1:{port}/"})
        async with mesh(s):
            m = await run_and_finish(MeshNetwork(
                s, load_task(TASKS / "solar-farm"), tmp_path / "out", reporter=lambda _: None, lineup=lineup(s)
            ))  # fmt: skip
    assert m.status == "ok", m.error
    assert m.prediction == "a2a answers 'Task: answer_question' with the document"
    lines = [json.loads(x) for x in (tmp_path / "out/frames.jsonl").read_text().splitlines()]
    assert [(x["src"], x["type"]) for x in lines[1:3]] == [("0", "subtask"), ("2", "result")]
    worker = m.agents["2"]
    assert worker.tool == "research" and worker.pkts_sent == 1 and worker.bytes_received > 0
    assert m.external_layers is not None and m.external_layers.body_tx > len(
        load_task(TASKS / "solar-farm").doc
    )


async def test_an_mcp_entry_naming_a_tool_the_server_lacks_ends_connect_failed_naming_its_tools(
    tmp_path: Path,
) -> None:
    with outside("outside_mcp_server.py", tmp_path) as port:
        m = await _run(tmp_path, f"reason@mcp+http://127.0.0.1:{port}/mcp#summarize", connect_timeout=1.0)
    assert m["status"] == "connect_failed"
    assert "has no tool 'summarize' (it lists answer)" in str(m["error"])
