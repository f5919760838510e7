"""Only a run's own agents: the mesh token proved at the handshake (mesh/admission.py), by plain
calls and over real WebSockets with real MeshAgents (fast fake model)."""

from __future__ import annotations

import asyncio
import os
import socket
import time
from pathlib import Path

import pytest

from gaiamesh.agents.agent import MeshAgent
from gaiamesh.agents.catalog import get_tool
from gaiamesh.agents.teams import agent_specs, lineup
from gaiamesh.errors import ForeignAgent, PortTaken
from gaiamesh.evaluation.finish import run_and_finish
from gaiamesh.mesh import admission
from gaiamesh.mesh.freshness import Freshness
from gaiamesh.mesh.relay import MeshNetwork
from gaiamesh.tasks import load_task

from ...conftest import TASKS, free_port_block
from ..fakes import FakeLLM
from .test_relay import TOOLS, mesh, settings_for


def test_proofs_hold_only_for_their_token_challenge_and_agent() -> None:
    asked = admission.relay_headers("t1")
    c = asked[admission.HEADER_CHALLENGE]
    assert admission.relay_refusal("t1", asked) is None
    assert "another mesh" in str(admission.relay_refusal("t2", asked))
    assert "another mesh" in str(admission.relay_refusal("t1", {}))
    assert admission.relay_refusal("t1", {**asked, admission.HEADER_CHALLENGE: "0" * 32}) is not None
    speaks = "gaiamesh.anp"
    proof = admission.agent_proof("t1", c, "0", "search", speaks)
    assert admission.agent_admitted("t1", c, proof, "0", "search", speaks)
    assert not admission.agent_admitted("t2", c, proof, "0", "search", speaks)
    assert not admission.agent_admitted("t1", c, proof, "1", "search", speaks)  # another agent's proof
    assert not admission.agent_admitted("t1", admission.challenge(), proof, "0", "search", speaks)  # replayed
    assert not admission.agent_admitted("t1", c, proof, "0", "search", "gaiamesh.json")  # made under another protocol
    assert not admission.agent_admitted("t1", c, None, "0", "search", speaks)
    assert "t1" not in "".join(asked.values()) and "t1" not in proof  # the token never crosses
    assert admission.relay_headers("") == {} and admission.agent_admitted("", c, None, "0", "search", speaks)


def test_a_relays_handshake_is_answered_once_and_only_while_fresh() -> None:
    fresh = Freshness(60)
    asked = admission.relay_headers("t1")
    assert admission.relay_refusal("t1", asked, fresh) is None
    assert "replayed" in str(admission.relay_refusal("t1", asked, fresh))  # captured and sent again
    assert admission.relay_refusal("t1", admission.relay_headers("t1"), fresh) is None  # a new one is taken
    old = f"{int((time.time() - 120) * 1000)}.{'ab' * 16}"
    stale = {admission.HEADER_CHALLENGE: old, admission.HEADER_RELAY_PROOF: admission.relay_proof("t1", old)}
    assert "stale" in str(admission.relay_refusal("t1", stale, fresh))
    timeless = {admission.HEADER_CHALLENGE: "ab" * 16, admission.HEADER_RELAY_PROOF: admission.relay_proof("t1", "ab" * 16)}
    assert "names no time" in str(admission.relay_refusal("t1", timeless, fresh))


async def test_an_agent_refuses_a_replayed_handshake_over_a_real_socket(tmp_path: Path) -> None:
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidStatus

    base = free_port_block(4)
    agents = settings_for(tmp_path, base, TOOLS, mesh_token="tok")
    async with mesh(agents):
        url = f"ws://127.0.0.1:{base}/ws"
        await _listening(base)
        asked = admission.relay_headers("tok")
        async with connect(url, additional_headers=asked) as ws:
            assert ws.response is not None and admission.HEADER_AGENT_PROOF in ws.response.headers
        with pytest.raises(InvalidStatus) as refused:
            async with connect(url, additional_headers=asked):
                pass
        assert refused.value.response.status_code == 403
        assert b"replayed" in refused.value.response.body


async def test_a_real_agents_proof_holds_only_for_the_protocol_it_chose(tmp_path: Path) -> None:
    """A relay that asked for one protocol, handed an answer whose proof the agent made for
    another (an attacker rewrote both heads: bench-attacks' crossproof), refuses it."""
    from websockets.asyncio.client import connect

    from gaiamesh.mesh.connect import admitted
    from gaiamesh.mesh.subprotocols import subprotocol

    base = free_port_block(4)
    agents = settings_for(tmp_path, base, TOOLS, mesh_token="tok")
    spec = next(a for a in agent_specs(agents) if a.port == base)
    async with mesh(agents):
        await _listening(base)
        asked = admission.relay_headers("tok")
        async with connect(f"ws://127.0.0.1:{base}/ws", additional_headers=asked,
                           subprotocols=[subprotocol("json")]) as ws:  # fmt: skip
            assert ws.response is not None
            headers = ws.response.headers
    assert admitted(spec, agents, asked, headers, "here", subprotocol("json")) is not None
    with pytest.raises(ForeignAgent, match="did not prove this run's mesh token"):
        admitted(spec, agents, asked, headers, "here", subprotocol("signed"))


async def _listening(port: int, within_s: float = 10.0) -> None:
    """Until the agent on ``port`` takes connections (as the relay does, trying again while it starts)."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.05)  # retry back-off while the agent starts
        else:
            writer.close()
            return


async def _run(tmp: Path, relay_token: str, agent_token: str, connect_timeout: float = 15) -> tuple[dict[str, object], float]:
    base = free_port_block(4)
    agents = settings_for(tmp, base, TOOLS, mesh_token=agent_token, connect_timeout=connect_timeout)
    relay = agents.model_copy(update={"mesh_token": relay_token})
    async with mesh(agents):
        started = time.monotonic()
        m = await run_and_finish(MeshNetwork(relay, load_task(TASKS / "solar-farm"), tmp / "out", reporter=lambda _: None, lineup=lineup(relay)))
    return m.model_dump(), time.monotonic() - started


async def test_agents_holding_the_runs_token_are_measured(tmp_path: Path) -> None:
    m, _ = await _run(tmp_path, "same-token", "same-token")
    assert m["status"] == "ok" and m["prediction"] == "148 megawatts"


@pytest.mark.parametrize(
    ("relay_token", "agent_token", "words"),
    [
        ("this-run", "another-stack", "refused this run's mesh token"),  # the agents refuse the relay
        ("this-run", "", "did not prove this run's mesh token"),  # agents that prove nothing
    ],
)
async def test_a_relay_never_measures_another_meshs_agents(
    tmp_path: Path, relay_token: str, agent_token: str, words: str
) -> None:
    m, took = await _run(tmp_path, relay_token, agent_token)
    assert m["status"] == "connect_failed"
    assert words in str(m["error"]) and "--base-port" in str(m["error"])
    assert m["pkt_cnt"] == 0 and m["bytes_tx"] == 0  # nothing was sent to, or counted from, them
    assert took < 10  # at once, not after CONNECT_TIMEOUT (15 s) of retries


async def test_an_agent_refuses_a_relay_without_its_token(tmp_path: Path) -> None:
    # a relay that proves nothing tries again until CONNECT_TIMEOUT (an agent may still be
    # starting): 3 s here, not the 15 s above, which only the at-once cases need to be long
    m, _ = await _run(tmp_path, "", "the-agents-token", connect_timeout=3)
    assert m["status"] == "connect_failed" and m["pkt_cnt"] == 0


async def test_an_agent_that_cannot_bind_names_the_port_and_its_holder(tmp_path: Path) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        s = settings_for(tmp_path, port, ["search"]).model_copy(update={"node_id": "0", "port": port})
        agent = MeshAgent(s, get_tool("search"), llm=FakeLLM())  # type: ignore[arg-type]
        with pytest.raises(PortTaken) as caught:
            await asyncio.wait_for(agent.serve(asyncio.Event()), 10)
    message = str(caught.value)
    assert f"127.0.0.1:{port}" in message and "--base-port" in message
    assert f"(pid {os.getpid()})" in message  # ss names this very process as the holder
