"""MeshAgent over a real WebSocket: filtering, workspace, bad frames, tool errors, health."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from acp_sdk.client import Client
from acp_sdk.models import Message, MessagePart, RunStatus
from websockets.asyncio.client import connect

from gaiamesh.agents.agent import MeshAgent
from gaiamesh.agents.catalog import get_tool
from gaiamesh.agents.native import HELLO, host_names
from gaiamesh.mesh import admission
from gaiamesh.mesh.frames import Announcement, doc_init
from gaiamesh.models.backends.base import Ask, Completion, ModelKind, Scores
from gaiamesh.models.llm import LLMClient
from gaiamesh.settings import load_settings

from ...conftest import free_port
from ..fakes import FakeLLM


@contextlib.asynccontextmanager
async def serving(
    tmp: Path, node_id: str, tool: str, llm: Any = None, check: bool = False, native: int = 0, **kw: Any
) -> AsyncIterator[int]:
    """A real MeshAgent on a free loopback port (fake model unless ``llm``); yields the port.
    ``check``: its model is checked first, as ``gaiamesh agent`` checks it. ``native``: the port
    of its native protocols (by default PORT + 1000, whatever holds it)."""
    port = free_port()
    if native:
        kw["native_port_offset"] = native - port
    s = load_settings(node_id=node_id, tool=tool, port=port, workspace_root=tmp, **kw)
    stop = asyncio.Event()
    agent = MeshAgent(s, get_tool(s.tool), llm=llm or FakeLLM())
    if check:
        await agent.check_model()
    server = asyncio.create_task(agent.serve(stop))
    await asyncio.wait_for(agent.listening.wait(), 10)
    try:
        yield port
    finally:
        stop.set()
        await server


async def test_agent_serves_filters_and_keeps_a_workspace(tmp_path: Path) -> None:
    async with serving(tmp_path, "0", "search") as port:
        async with connect(f"ws://127.0.0.1:{port}/ws", open_timeout=10) as ws:
            async with httpx.AsyncClient() as http:
                assert (await http.get(f"http://127.0.0.1:{port}/health")).text == "ok\n"
            packet = doc_init(
                "run-a", "The farm has 148 megawatts. Sheep graze there.", "How big is the farm?", 20
            )
            await ws.send(json.dumps(packet.to_dict()).encode())
            reply = json.loads(await asyncio.wait_for(ws.recv(), 10))
            await ws.send(b"\x00garbage")  # rejected, the agent keeps serving
            await ws.send(json.dumps(packet.to_dict()).encode())
            again = json.loads(await asyncio.wait_for(ws.recv(), 10))
        assert again["seq"] == 2
        assert reply["type"] == "search_docs" and reply["src"] == "0" and reply["run_id"] == "run-a"
        # the run's own folder holds what it emitted; a frame of no run is logged beside
        log = [json.loads(x) for x in (tmp_path / "0/run-a/agent.log").read_text().splitlines()]
        assert [x["event"] for x in log] == ["emit", "emit"]
        unowned = [json.loads(x) for x in (tmp_path / "0/agent.log").read_text().splitlines()]
        assert [x["event"] for x in unowned] == ["rejected"] and "malformed JSON" in unowned[0]["error"]
        memory = json.loads((tmp_path / "0/run-a/memory.json").read_text())
        assert memory["question"] == "How big is the farm?" and memory["retrieved_chunks"]


async def test_unreachable_model_becomes_an_error_packet_after_the_retry_window(tmp_path: Path) -> None:
    dead_llm = LLMClient.ollama(f"http://127.0.0.1:{free_port()}", "gemma3:270m", timeout=5, retry_for=1.0)
    async with serving(tmp_path, "3", "reason", dead_llm) as port:
        async with connect(f"ws://127.0.0.1:{port}/ws", open_timeout=10) as ws:
            triples = {
                "type": "triples",
                "run_id": "r",
                "src": "2",
                "seq": 1,
                "question": "q?",
                "payload": {"facts": [{"text": "A fact.", "score": 1.0}], "triples": []},
            }
            sent = time.monotonic()
            await ws.send(json.dumps(triples).encode())
            reply = json.loads(await asyncio.wait_for(ws.recv(), 15))
            waited = time.monotonic() - sent
        assert reply["type"] == "error" and reply["payload"]["tool"] == "reason"
        assert reply["payload"]["kind"] == "model_unreachable"
        assert "model server unreachable at http://127.0.0.1:" in reply["payload"]["error"]
        assert "LLM_RETRY_FOR=1" in reply["payload"]["error"]
        assert waited >= 1.0  # it kept trying for the whole window before giving up


async def test_announces_its_tool_in_the_handshake(tmp_path: Path) -> None:
    async with serving(tmp_path, "2", "triple") as port:
        async with connect(f"ws://127.0.0.1:{port}/ws", open_timeout=10) as ws:
            assert ws.response is not None
            said = Announcement.from_headers(ws.response.headers)
        assert said == Announcement(node_id="2", tool="triple", consumes=frozenset({"events"}))


async def test_overlapping_runs_on_one_connection_keep_their_state_apart(tmp_path: Path) -> None:
    """Two runs interleaved on the same connection: each reply carries only its own document."""
    docs = {
        "run-a": ("The farm has 148 megawatts. Sheep graze there.", "How big is the farm?"),
        "run-b": ("The bridge is 310 metres long. It opened in 1981.", "How long is the bridge?"),
    }
    async with (
        serving(tmp_path, "0", "search") as port,
        connect(f"ws://127.0.0.1:{port}/ws", open_timeout=10) as ws,
    ):
        for run_id, (doc, q) in docs.items():
            await ws.send(json.dumps(doc_init(run_id, doc, q, 20).to_dict()).encode())
        replies = [json.loads(await asyncio.wait_for(ws.recv(), 10)) for _ in docs]
    by_run = {r["run_id"]: r for r in replies}
    assert set(by_run) == set(docs)
    for run_id, (doc, q) in docs.items():
        reply = by_run[run_id]
        assert reply["seq"] == 1 and reply["question"] == q
        text = " ".join(p["text"] for p in reply["payload"]["passages"])
        assert text and set(text.split()) <= set(doc.split())  # nothing of the other run's document
        memory = json.loads((tmp_path / "0" / run_id / "memory.json").read_text())
        assert memory["run_id"] == run_id and memory["question"] == q
        log = [json.loads(x) for x in (tmp_path / "0" / run_id / "agent.log").read_text().splitlines()]
        assert [x["packet"]["run_id"] for x in log] == [run_id]


async def test_an_ablated_stage_hands_its_input_on_without_working(tmp_path: Path) -> None:
    llm = FakeLLM()
    facts = [{"text": "The farm has 148 megawatts.", "score": 2.0}, {"text": "Sheep graze there.", "score": 1.0}]
    events = {"type": "events", "run_id": "r", "src": "1", "seq": 1, "question": "How big is the farm?",
              "payload": {"facts": facts}}  # fmt: skip
    async with serving(tmp_path, "2", "triple", llm, ablate="triple,extract") as port:
        async with connect(f"ws://127.0.0.1:{port}/ws", open_timeout=10) as ws:
            await ws.send(json.dumps(events).encode())
            reply = json.loads(await asyncio.wait_for(ws.recv(), 10))
    assert reply["type"] == "triples" and reply["payload"]["triples"] == []
    assert reply["payload"]["facts"] == facts and reply["token_used"] == 0
    assert llm.prompts == []  # no model call: the stage did no work
    async with serving(tmp_path / "full", "2", "triple", llm) as port:  # the same stage, not left out
        async with connect(f"ws://127.0.0.1:{port}/ws", open_timeout=10) as ws:
            await ws.send(json.dumps(events).encode())
            full = json.loads(await asyncio.wait_for(ws.recv(), 10))
    assert full["payload"]["triples"] and len(llm.prompts) == 2


def test_the_answering_stage_cannot_be_left_out(tmp_path: Path) -> None:
    settings = load_settings(node_id="3", tool="reason", port=free_port(), workspace_root=tmp_path, ablate="reason")
    with pytest.raises(ValueError, match="ABLATE names 'reason', which cannot be left out: it makes the answer"):
        MeshAgent(settings, get_tool(settings.tool), llm=FakeLLM())  # type: ignore[arg-type]


class TimedBackend:
    """A backend whose scoring takes ``score_s`` (a server that scores slowly, or quickly);
    the real servers are timed in tests/e2e/test_backends.py."""

    name, where = "openai", "http://127.0.0.1:1/v1"

    def __init__(self, score_s: float) -> None:
        self.score_s, self.scored = score_s, 0

    async def kind(self) -> ModelKind:
        return "base"

    async def check(self) -> None:
        return None

    async def complete(self, ask: Ask) -> Completion:
        return Completion(" 148 megawatts\n", 5, 3)

    async def score(self, prompt: str, continuations: list[str]) -> Scores:
        self.scored += 1
        await asyncio.sleep(self.score_s)  # the server's time, not a synchronization
        return Scores([-1.0] * len(continuations), 10, 0)

    async def aclose(self) -> None:
        return None


async def test_an_agent_that_scores_chooses_by_what_scoring_costs_and_says_so(tmp_path: Path) -> None:
    # 0.2 s for a probe of 10 tokens: 1,280 ms a passage of 64, over a budget of 1,000
    slow = TimedBackend(0.2)
    async with serving(tmp_path, "3", "reason", LLMClient(slow), check=True, score_budget_ms=1000) as port:
        async with connect(f"ws://127.0.0.1:{port}/ws", open_timeout=10) as ws:
            assert ws.response is not None
            said = Announcement.from_headers(ws.response.headers)
    assert said is not None and said.answer_choice == "weights" and said.passage_ms is not None
    assert said.passage_ms >= 1280 and "over SCORE_BUDGET_MS=1000" in said.answer_choice_why
    assert slow.scored == 3  # repeated while over budget (a stall is not the server's cost), then settled
    fast = TimedBackend(0.0)
    async with serving(tmp_path, "3", "reason", LLMClient(fast), check=True) as port:
        async with connect(f"ws://127.0.0.1:{port}/ws", open_timeout=10) as ws:
            assert ws.response is not None
            said = Announcement.from_headers(ws.response.headers)
    assert said is not None and said.answer_choice == "likelihood" and fast.scored == 1
    # a tool that scores nothing probes nothing and announces no choice
    idle = TimedBackend(0.0)
    async with serving(tmp_path, "2", "triple", LLMClient(idle), check=True) as port:
        async with connect(f"ws://127.0.0.1:{port}/ws", open_timeout=10) as ws:
            assert ws.response is not None
            said = Announcement.from_headers(ws.response.headers)
    assert said is not None and said.answer_choice == "" and idle.scored == 0


def message(packet: dict[str, Any]) -> Message:
    return Message(parts=[MessagePart(content_type="application/json", content=json.dumps(packet))])


async def test_a_call_from_outside_the_relay_leaves_no_workspace_unless_the_tool_works(
    tmp_path: Path,
) -> None:
    """Native calls (ACP, with the SDK's client as shipped): a run the relay's hello did not
    announce gets no folder for a packet the tool does not work on; the relay's run gets its
    folder at first sight, as on the WebSocket; the tool's work gets one wherever it comes from."""
    native = free_port()
    events = {"type": "events", "run_id": "outside-2", "src": "1", "seq": 1, "question": "How big is the farm?",
              "payload": {"facts": [{"text": "The farm has 148 megawatts.", "score": 1.0}]}}  # fmt: skip
    async with serving(tmp_path, "2", "triple", native=native, mesh_token="the-mesh"):
        base = f"http://127.0.0.1:{native}"
        async with httpx.AsyncClient(timeout=5) as http:
            for _ in range(100):  # the native server starts beside the WebSocket's: the relay's hello
                hello = {**admission.relay_headers("the-mesh"), admission.HEADER_RUN: "relay-1"}
                with contextlib.suppress(httpx.HTTPError):
                    if (await http.get(base + HELLO, headers=hello)).status_code == 200:
                        break
                await asyncio.sleep(0.05)
        async with Client(base_url=base + "/acp", timeout=10) as acp:
            outside = await acp.run_sync(
                message(doc_init("outside-1", "Sheep graze.", "What grazes?", 20).to_dict()), agent="triple"
            )
            relayed = await acp.run_sync(
                message(doc_init("relay-1", "Sheep graze.", "What grazes?", 20).to_dict()), agent="triple"
            )
            worked = await acp.run_sync(message(events), agent="triple")
    assert outside.status == relayed.status == worked.status == RunStatus.COMPLETED
    assert not (tmp_path / "2" / "outside-1").exists()
    assert json.loads((tmp_path / "2" / "relay-1" / "memory.json").read_text())["question"] == "What grazes?"
    assert json.loads(worked.output[0].parts[0].content or "")["type"] == "triples"
    assert (tmp_path / "2" / "outside-2" / "memory.json").exists()  # the tool worked for it


def test_the_names_an_agent_answers_to(tmp_path: Path) -> None:
    settings = load_settings(
        node_id="3", agent_host="0.0.0.0", agents="3=reason@agent-reason:9003,4=reason@elsewhere:9004"
    )
    assert host_names(settings) == (socket.gethostname(), "agent-reason")
    assert host_names(load_settings(node_id="3", agent_host="127.0.0.1", agents="bad"))[1:] == ("127.0.0.1",)
