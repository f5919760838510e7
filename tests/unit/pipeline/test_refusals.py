"""A pipeline tool that gets nothing to work on refuses with the hierarchy's kind (ToolError),
and the agent running it still turns that into an ``error`` packet of kind "tool"."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from websockets.asyncio.client import connect

from gaiamesh.agents.agent import MeshAgent
from gaiamesh.agents.catalog import get_tool
from gaiamesh.errors import GaiameshError, ToolError, exit_code, label
from gaiamesh.mesh.frames import Packet, PacketType, make_packet
from gaiamesh.models.llm import LLMUsage
from gaiamesh.settings import load_settings
from gaiamesh.tools.tool import ToolContext

from ...conftest import free_port
from ..fakes import FakeLLM

EMPTY = [
    ("search", PacketType.DOC_INIT, {"chunks": []}, "doc_init carries no chunks"),
    ("extract", PacketType.SEARCH_DOCS, {"passages": [], "n_chunks": 0}, "search_docs carries no passages"),
    ("triple", PacketType.EVENTS, {"facts": []}, "events carries no facts"),
    ("reason", PacketType.TRIPLES, {"facts": [], "triples": []}, "triples packet carries no facts"),
]


def packet(ptype: PacketType, payload: dict) -> Packet:
    return make_packet(ptype, payload, run_id="r", src="x", seq=1, question="How big is the farm?")


@pytest.mark.parametrize(("tool", "ptype", "payload", "words"), EMPTY, ids=[e[0] for e in EMPTY])
async def test_an_empty_input_is_a_tool_error(tool: str, ptype: PacketType, payload: dict, words: str) -> None:
    ctx = ToolContext(llm=FakeLLM(), usage=LLMUsage())  # type: ignore[arg-type]
    with pytest.raises(ToolError, match=words) as caught:
        await get_tool(tool).run(ctx, packet(ptype, payload))
    assert type(caught.value) is ToolError  # the kind itself, not a bare ValueError
    exc: GaiameshError = caught.value
    assert (exit_code(exc), label(exc)) == (1, "tool error")


async def test_the_agent_answers_a_tool_error_with_an_error_packet(tmp_path: Path) -> None:
    port = free_port()
    settings = load_settings(node_id="2", tool="triple", port=port, workspace_root=tmp_path)
    agent = MeshAgent(settings, get_tool(settings.tool), llm=FakeLLM())  # type: ignore[arg-type]
    stop = asyncio.Event()
    server = asyncio.create_task(agent.serve(stop))
    try:
        await asyncio.wait_for(agent.listening.wait(), 10)
        async with connect(f"ws://127.0.0.1:{port}/ws", open_timeout=10) as ws:
            await ws.send(json.dumps(packet(PacketType.EVENTS, {"facts": []}).to_dict()).encode())
            reply = json.loads(await asyncio.wait_for(ws.recv(), 10))
    finally:
        stop.set()
        await server
    assert reply["type"] == "error"
    assert reply["payload"] == {"tool": "triple", "error": "events carries no facts", "on": "events", "kind": "tool"}
