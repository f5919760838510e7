"""The orchestrator agent over a real WebSocket, with the test as its relay."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from websockets.asyncio.client import connect

from gaiamesh.agents.agent import MeshAgent
from gaiamesh.agents.catalog import get_tool
from gaiamesh.mesh.frames import HEADER_READS, doc_init
from gaiamesh.settings import load_settings

from ...conftest import free_port
from ..fakes import FakeLLM

DOC = "The mill was founded in 1820. It closed in 1901."


async def test_it_hands_out_a_subtask_and_stops_waiting_when_the_relay_goes(tmp_path: Path) -> None:
    port = free_port()
    settings = load_settings(node_id="o", tool="orchestrator", port=port, workspace_root=tmp_path, subtask_timeout=60)
    agent = MeshAgent(settings, get_tool(settings.tool), llm=FakeLLM())
    stop = asyncio.Event()
    server = asyncio.create_task(agent.serve(stop))
    await asyncio.wait_for(agent.listening.wait(), 10)
    async with connect(f"ws://127.0.0.1:{port}/ws", open_timeout=10) as ws:
        assert ws.response is not None and ws.response.headers[HEADER_READS] == "result"
        question = "How many years passed between the founding of the mill and its closing?"
        await ws.send(json.dumps(doc_init("run-q", DOC, question).to_dict()).encode())
        first = json.loads(await asyncio.wait_for(ws.recv(), 10))
        assert first["type"] == "subtask" and first["src"] == "o"
        assert first["payload"]["assigned_agent_role"] == "research" and first["payload"]["tool_name"] == "find_fact"
        assert len(agent._waiting) == 1
    # The relay is gone: no result can come, so the orchestrator stops waiting now, not after
    # SUBTASK_TIMEOUT (60 s): the server shuts down within seconds.
    stop.set()
    await asyncio.wait_for(server, 10)
    assert agent._waiting == {}
    events = [json.loads(x)["event"] for x in (tmp_path / "o" / "run-q" / "journal.jsonl").read_text().splitlines()]
    assert events[:3] == ["plan_chosen", "attempt_started", "stage_started"] and "task_completed" not in events
