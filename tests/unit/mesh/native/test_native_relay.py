"""A run on the native wire (``TRANSPORT=native``) with real MeshAgents on a fast fake model: the
relay's protocol client, the counting tap and the agents' native servers over real sockets."""

from __future__ import annotations

import asyncio
import json
from itertools import pairwise
from pathlib import Path

import httpx
import pytest

from gaiamesh.agents.teams import lineup
from gaiamesh.evaluation.audit import audit
from gaiamesh.evaluation.finish import run_and_finish
from gaiamesh.mesh.native import pool
from gaiamesh.mesh.protocols.plain import MEDIA_TYPE, Unframer, framed
from gaiamesh.mesh.relay import MeshNetwork
from gaiamesh.tasks import load_task

from ....conftest import TASKS, free_port_block
from ..test_relay import TOOLS, mesh, run, settings_for

PLAIN = ["json", "binary", "compressed", "signed"]


def test_frames_split_however_the_bytes_arrive() -> None:
    stream = framed(b"abc") + framed(b"") + framed(b"x" * 70000)
    unframer = Unframer()
    got = [f for i in range(0, len(stream), 7) for f in unframer.feed(stream[i : i + 7])]
    assert got == [b"abc", b"", b"x" * 70000] and unframer.rest == 0


@pytest.mark.parametrize("protocol", PLAIN)
async def test_a_native_run_answers_as_on_the_relay_and_counts_every_layer(tmp_path: Path, protocol: str) -> None:
    relay = await run(tmp_path / "relay", settings_for(tmp_path / "relay", free_port_block(4), TOOLS, protocol=protocol))
    s = settings_for(tmp_path, free_port_block(4), TOOLS, protocol=protocol, transport="native")
    m = await run(tmp_path, s)
    assert m["status"] == "ok", m["error"]
    assert m["transport"] == "native" and relay["transport"] == "relay" and relay["layers"] is None
    assert m["prediction"] == relay["prediction"] == "148 megawatts"
    assert m["pkt_cnt"] == relay["pkt_cnt"]
    if protocol == "compressed":  # zlib's output differs by a byte or two with the run's id
        assert abs(m["bytes_tx"] - relay["bytes_tx"]) < 0.01 * relay["bytes_tx"]
    else:  # the same frames, on another wire
        assert (m["bytes_tx"], m["bytes_rx"]) == (relay["bytes_tx"], relay["bytes_rx"])
    lines = [json.loads(x) for x in (tmp_path / "out/frames.jsonl").read_text().splitlines()]
    layers = m["layers"]
    assert layers["requests"] == sum(len(x["dst"]) for x in lines)  # one request per copy sent
    assert layers["body_tx"] == m["bytes_tx"]  # plain HTTP: the body is the protocol's frame
    assert layers["body_rx"] == m["bytes_rx"] + 4 * (len(lines) - 1)  # each answer frame's length prefix
    assert layers["envelope_bytes"] == 4 * (len(lines) - 1)  # plain HTTP's only envelope: that prefix
    assert layers["http_tx"] > layers["body_tx"] and layers["http_rx"] > layers["body_rx"]
    assert layers["connections"] >= len(TOOLS) and layers["unparsed"] == layers["refused"] == 0
    assert all(a == b for _, a, b in audit(tmp_path / "out"))


async def test_a_keep_alive_wire_keeps_each_agents_connection_across_the_runs_idle_gaps(tmp_path: Path) -> None:
    """The model's time between two frames to one agent (here the fake model takes 2 s a call,
    so reason waits longer than httpx's and uvicorn's 5 s default idle limits between its doc_init
    and its triples) does not close the connection: plain HTTP keeps one per agent for the run."""
    s = settings_for(tmp_path, free_port_block(4), TOOLS, protocol="json", transport="native")
    m = await run(tmp_path, s, llm_delay=2.0)
    assert m["status"] == "ok", m["error"]
    lines = [json.loads(x) for x in (tmp_path / "out/frames.jsonl").read_text().splitlines()]
    sent: dict[str, list[float]] = {}
    for line in lines:
        for node in line["dst"]:
            sent.setdefault(node, []).append(line["t_ms"])
    assert max(b - a for times in sent.values() for a, b in pairwise(times)) > 5500  # a gap to outlive
    layers = m["layers"]
    assert layers["requests"] > len(TOOLS)  # several requests to some agent
    assert layers["connections"] == len(TOOLS), layers  # and one connection each, for the whole run
    assert layers["keep_alive_s"] == s.run_timeout and pool.AGENT_POOL_LEAST <= layers["pool_connections"] <= pool.AGENT_POOL  # recorded


async def test_a_native_run_where_no_agent_serves_its_native_port_ends_connect_failed(tmp_path: Path) -> None:
    s = settings_for(tmp_path, free_port_block(4), TOOLS)
    elsewhere = s.model_copy(update={"transport": "native", "native_port_offset": 2000, "connect_timeout": 1.5})
    async with mesh(s):  # the agents serve on PORT + 1000; the relay looks at PORT + 2000
        m = await run_and_finish(MeshNetwork(elsewhere, load_task(TASKS / "solar-farm"), tmp_path / "out", reporter=lambda _: None,
                              lineup=lineup(elsewhere)))  # fmt: skip
    assert m.status == "connect_failed" and m.error
    assert "(native)" in m.error and "not reachable" in m.error


async def test_an_agents_native_server_refuses_bad_input_and_goes_on_serving(tmp_path: Path) -> None:
    base = free_port_block(4)
    s = settings_for(tmp_path, base, TOOLS)
    url = f"http://127.0.0.1:{base + s.native_port_offset}"
    async with mesh(s), httpx.AsyncClient(base_url=url) as http:
        for _ in range(100):  # until the agents listen
            try:
                hello = await http.get("/gaiamesh/hello")
                break
            except httpx.ConnectError:
                await asyncio.sleep(0.05)  # polling: the agent gives no other signal that it listens
        assert hello.status_code == 200 and hello.headers["X-Gaiamesh-Tool"] == "search"
        bad = await http.post("/http/json/frames", content=b"{not json", headers={"Content-Type": MEDIA_TYPE})
        assert bad.status_code == 400 and "rejected" in bad.text
        big = await http.post("/http/json/frames", content=b"x" * (4 * s.max_frame_bytes + 1))
        assert big.status_code == 413
        assert (await http.post("/nothing-here", content=b"x")).status_code == 404
        hello = await http.get("/gaiamesh/hello")
        assert hello.status_code == 200  # still serving


SDK = ["a2a", "acp", "mcp", "agora"]  # the protocols whose SDK's own server and client carry the frames
KEEP_ALIVE = ("a2a", "acp", "mcp")  # whose client keeps its connections (Agora's sender: requests.post, one each)


@pytest.mark.parametrize("protocol", SDK)
async def test_a_run_on_a_protocols_own_sdk_answers_as_on_the_relay(tmp_path: Path, protocol: str) -> None:
    relay = await run(tmp_path / "relay", settings_for(tmp_path / "relay", free_port_block(4), TOOLS, protocol=protocol))
    m = await run(tmp_path, settings_for(tmp_path, free_port_block(4), TOOLS, protocol=protocol, transport="native"))
    assert m["status"] == "ok", m["error"]
    assert m["prediction"] == relay["prediction"] == "148 megawatts" and m["pkt_cnt"] == relay["pkt_cnt"]
    layers = m["layers"]
    lines = [json.loads(x) for x in (tmp_path / "out/frames.jsonl").read_text().splitlines()]
    assert layers["requests"] >= sum(len(x["dst"]) for x in lines)  # and the protocol's first requests
    assert layers["body_tx"] > m["bytes_tx"] and layers["body_rx"] > m["bytes_rx"]  # the envelope, counted
    assert layers["envelope_bytes"] == layers["body_tx"] + layers["body_rx"] - m["bytes_tx"] - m["bytes_rx"]
    # the header share counts the envelope as the relay's wire counts it inside the frame
    assert relay["header_share"] > 0 and m["header_share"] > 0.5 * relay["header_share"]
    assert layers["http_tx"] > layers["body_tx"] and layers["unparsed"] == 0
    if protocol in KEEP_ALIVE:  # its connections serve several requests each, not one per request
        assert layers["connections"] <= layers["requests"] / 2 and layers["connections_reused"] > 0, layers
    assert layers["acp_store"] == ("keyed" if protocol == "acp" else None)  # ACP_STORE, recorded
    assert all(a == b for _, a, b in audit(tmp_path / "out"))


def test_the_names_that_stream_are_the_bindings_that_do() -> None:
    from gaiamesh.mesh.native import binding, native_protocols, streaming

    for protocol in native_protocols():
        try:
            made = binding(protocol)
        except ImportError:  # a binding still to come
            continue
        assert made.streams == (protocol in streaming()), protocol


def test_an_orchestrated_run_on_a_wire_that_answers_once_is_refused_before_it_starts() -> None:
    from gaiamesh.mesh.native import NoNativeWire, check

    assert check("anp") == "anp" and check("a2a", "orchestrated") == "a2a"
    with pytest.raises(NoNativeWire, match="answers once per request"):
        check("anp", "orchestrated")
    with pytest.raises(NoNativeWire, match="no native wire"):
        check("carrier-pigeon")


async def test_latency_at_the_tap_slows_a_native_run_and_changes_nothing_else(tmp_path: Path) -> None:
    calm = await run(tmp_path / "calm", settings_for(tmp_path / "calm", free_port_block(4), TOOLS, transport="native"))
    s = settings_for(tmp_path, free_port_block(4), TOOLS, transport="native", fault_latency_ms=40)
    m = await run(tmp_path, s)
    assert m["status"] == "ok" and m["prediction"] == calm["prediction"]
    # each of the pipeline's 4 hops crosses a tap there and back: 40 ms each way, at least
    assert m["elapsed_ms"] >= 4 * 2 * 40
    assert m["layers"]["resets"] == 0
    frames = [json.loads(x) for x in (tmp_path / "out/frames.jsonl").read_text().splitlines()]
    assert not any(f.get("fault") for f in frames)  # the core's links carried no fault


async def test_a_request_lost_at_the_tap_is_the_protocol_clients_to_recover(tmp_path: Path) -> None:
    # Every request to agent 1 is lost (reset): plain HTTP's client does not send it again, so the
    # frame is lost and the run ends frame_lost, named; the relay redelivers nothing.
    s = settings_for(tmp_path, free_port_block(4), TOOLS, transport="native", fault_loss=1.0, fault_links="1")
    m = await run(tmp_path, s)
    assert m["status"] == "frame_lost" and "agent 1" in m["error"], m["error"]
    assert m["layers"]["resets"] >= 1 and m["layers"]["undelivered"] >= 1
    assert all(a == b for _, a, b in audit(tmp_path / "out"))
