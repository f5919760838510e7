"""The relay over real WebSockets on 127.0.0.1, with real MeshAgents on a fast fake model."""

from __future__ import annotations

import asyncio
import contextlib
import json
import tarfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection, serve

from gaiamesh.agents.agent import MeshAgent
from gaiamesh.agents.catalog import get_tool, subscriptions
from gaiamesh.agents.teams import agent_specs, lineup
from gaiamesh.evaluation.finish import run_and_finish
from gaiamesh.evaluation.metrics import totals_from_log
from gaiamesh.mesh.frames import Announcement
from gaiamesh.mesh.protocols import available, generate_keys, get_adapter
from gaiamesh.mesh.relay import MeshNetwork
from gaiamesh.mesh.subprotocols import subprotocol
from gaiamesh.settings import Settings, load_settings
from gaiamesh.tasks import load_task

from ...conftest import TASKS, free_port_block
from ..fakes import FakeLLM

TOOLS = ["search", "extract", "triple", "reason"]
Script = Callable[[ServerConnection, dict[str, Any]], Awaitable[None]]


def settings_for(tmp: Path, base: int, tools: list[str], **kw: Any) -> Settings:
    agents = ",".join(f"{i}={t}@127.0.0.1:{base + i}" for i, t in enumerate(tools))
    keys = generate_keys(tmp / "keys", ["network", *(str(i) for i in range(len(tools)))])
    defaults: dict[str, Any] = dict(
        agents=agents, workspace_root=tmp / "ws", run_timeout=20, connect_timeout=10, keys_dir=keys
    )
    return load_settings(**{**defaults, **kw})


@contextlib.asynccontextmanager
async def mesh(settings: Settings, scripted: dict[str, Script] | None = None, llm_delay: float = 0.0) -> AsyncIterator[None]:
    """Run real agents (fake model, each call taking ``llm_delay`` s) for every spec, except
    scripted ones that play a role."""
    scripted = scripted or {}
    stop = asyncio.Event()
    tasks = []
    for spec in agent_specs(settings):
        if spec.external is not None:
            continue  # an agent someone else runs (tests/e2e/test_external_agents.py)
        if spec.node_id in scripted:
            said = Announcement(node_id=spec.node_id, tool=spec.tool, consumes=subscriptions()[spec.tool])
            tasks.append(asyncio.create_task(_scripted(spec.port, scripted[spec.node_id], stop, said)))
        else:
            s = settings.model_copy(update={"node_id": spec.node_id, "tool": spec.tool, "port": spec.port})
            tasks.append(asyncio.create_task(MeshAgent(s, get_tool(s.tool), llm=FakeLLM(delay=llm_delay)).serve(stop)))  # type: ignore[arg-type]
    try:
        yield
    finally:
        stop.set()
        await asyncio.gather(*tasks)


def announcing(said: Announcement | None) -> Any:
    """A ``process_response`` hook that announces like a real agent (None: announce nothing)."""

    def hook(conn: ServerConnection, request: Any, response: Any) -> None:
        if said is not None:
            response.headers.update(said.headers())

    return hook


async def _scripted(port: int, script: Script, stop: asyncio.Event, said: Announcement | None = None) -> None:
    async def handler(ws: ServerConnection) -> None:
        async for message in ws:
            packet = json.loads(message)
            if packet["type"] == "doc_init":
                await script(ws, packet)

    speaks = [subprotocol(p) for p in available()] if said is not None else None
    async with serve(
        handler, "127.0.0.1", port, max_size=None, process_response=announcing(said), subprotocols=speaks
    ):
        await stop.wait()


async def run(tmp: Path, settings: Settings, scripted: dict[str, Script] | None = None, llm_delay: float = 0.0) -> dict[str, Any]:
    async with mesh(settings, scripted, llm_delay):
        metrics = await run_and_finish(MeshNetwork(
            settings, load_task(TASKS / "solar-farm"), tmp / "out", reporter=lambda _: None, lineup=lineup(settings)
        ))
    return metrics.model_dump()


def assert_consistent(out: Path, metrics: dict[str, Any]) -> None:
    totals = totals_from_log(out / "frames.jsonl")
    for key, value in totals.items():
        assert metrics[key] == value, key
    assert metrics["frames"] == len((out / "frames.jsonl").read_text().splitlines())


@pytest.mark.parametrize("protocol", ["json", "binary", "compressed", "signed", "a2a", "anp", "acp", "agora", "mcp"])
async def test_full_pipeline_counts_match_the_frame_log(tmp_path: Path, protocol: str) -> None:
    s = settings_for(tmp_path, free_port_block(4), TOOLS, protocol=protocol)
    m = await run(tmp_path, s)
    assert m["protocol"] == protocol
    assert m["status"] == "ok" and m["prediction"] == "148 megawatts" and m["quality_score"] == 1.0
    assert m["pkt_cnt"] == 5  # doc_init + search_docs + events + triples + final answer
    assert m["routing"] == "broadcast"
    # broadcast: doc_init to 4 agents, each of the 4 agent packets to the 3 others
    lines = [json.loads(x) for x in (tmp_path / "out/frames.jsonl").read_text().splitlines()]
    assert [len(x["dst"]) for x in lines] == [4, 3, 3, 3, 3]
    assert m["bytes_rx"] == sum(x["size"] for x in lines[1:])
    assert m["token_sum"] == sum(a["token_used"] for a in m["agents"].values()) > 0
    assert (m["header_overhead"] == 0) == (protocol == "json")
    if protocol != "json":  # header bytes cross the wire once in and once per copy out
        assert m["header_overhead"] == sum(
            x["header_size"] * ((x["src"] != "network") + len(x["dst"])) for x in lines
        )
    assert_consistent(tmp_path / "out", m)
    with tarfile.open(tmp_path / "out/run_artifacts.tar.gz") as tar:
        names = set(tar.getnames())
    for node in "0123":
        assert f"workspaces/{node}/agent.log" in names and f"workspaces/{node}/memory.json" in names
    assert {"frames.jsonl", "metrics.json", "config.json"} <= names
    config = json.loads((tmp_path / "out/config.json").read_text())
    assert config["settings"]["protocol"] == protocol and config["task"].endswith("solar-farm")


async def test_topic_routing_sends_less(tmp_path: Path) -> None:
    s = settings_for(tmp_path, free_port_block(4), TOOLS, routing="topic")
    m = await run(tmp_path, s)
    assert m["status"] == "ok" and m["routing"] == "topic"
    lines = [json.loads(x) for x in (tmp_path / "out/frames.jsonl").read_text().splitlines()]
    assert [x["dst"] for x in lines] == [["0"], ["1"], ["2"], ["3"], []]


async def test_bad_frames_are_rejected_logged_and_the_run_goes_on(tmp_path: Path) -> None:
    async def naughty_search(ws: ServerConnection, doc: dict[str, Any]) -> None:
        good = {
            "type": "search_docs",
            "run_id": doc["run_id"],
            "src": "0",
            "seq": 1,
            "question": doc["question"],
            "payload": {
                "passages": [{"chunk": 0, "score": 1.0, "text": "".join(doc["payload"]["chunks"])}],
                "n_chunks": 1,
            },
        }
        await ws.send(b"{this is not json")
        await ws.send(b"x" * 5000)  # oversized under MAX_FRAME_BYTES=4096
        await ws.send(json.dumps({**good, "type": "gossip"}).encode())
        await ws.send(json.dumps({**good, "src": "3"}).encode())  # spoofed sender
        await ws.send(json.dumps({**good, "run_id": "old-run"}).encode())
        await ws.send(json.dumps({**good, "payload": {"passages": []}}).encode())  # payload of the wrong shape
        await ws.send(json.dumps(good).encode())

    s = settings_for(tmp_path, free_port_block(4), TOOLS, max_frame_bytes=4096)
    m = await run(tmp_path, s, {"0": naughty_search})
    assert m["status"] == "ok" and m["rejected_cnt"] == 6 and m["agents"]["0"]["rejected"] == 6
    errors = [json.loads(x)["error"] for x in (tmp_path / "out/frames.jsonl").read_text().splitlines()]
    rejected = [e for e in errors if e]
    assert "malformed JSON" in rejected[0]
    assert rejected[1] == "oversized frame: 5000 bytes > MAX_FRAME_BYTES=4096"
    assert rejected[2] == "unknown packet type 'gossip'"
    assert "claims src '3' but arrived from agent '0'" in rejected[3]
    assert "belongs to run 'old-run'" in rejected[4]
    assert rejected[5] == "invalid packet field 'payload.n_chunks': Field required"
    assert_consistent(tmp_path / "out", m)  # rejected bytes are counted in bytes_rx, nothing lost


async def test_signed_relay_rejects_tampered_and_unsigned_frames(tmp_path: Path) -> None:
    s = settings_for(tmp_path, free_port_block(4), TOOLS, protocol="signed")

    async def tampering_search(ws: ServerConnection, raw: dict[str, Any]) -> None:
        signer = get_adapter("signed", "0", s.keys_dir)
        doc = raw  # already verified and decoded with agent 0's view of the keys
        good = {
            "type": "search_docs",
            "run_id": doc["run_id"],
            "src": "0",
            "seq": 1,
            "question": doc["question"],
            "payload": {
                "passages": [{"chunk": 0, "score": 1.0, "text": "".join(doc["payload"]["chunks"])}],
                "n_chunks": 1,
            },
        }
        blob = signer.encode(good)
        await ws.send(blob[:-3] + b"xyz")  # tampered payload
        await ws.send(get_adapter("json").encode(good))  # unsigned
        await ws.send(blob)

    m = await run_signed(tmp_path, s, tampering_search)
    assert m["status"] == "ok" and m["rejected_cnt"] == 2
    errors = [json.loads(x)["error"] for x in (tmp_path / "out/frames.jsonl").read_text().splitlines()]
    assert "signed: bad signature on a frame from '0'" in errors
    assert any(e and "unsigned frame" in e for e in errors)
    assert_consistent(tmp_path / "out", m)


async def run_signed(tmp: Path, settings: Settings, script: Script) -> dict[str, Any]:
    """Like ``run`` but the scripted search agent decodes the signed doc_init first."""
    relay_view = get_adapter("signed", "0", settings.keys_dir)
    stop = asyncio.Event()

    async def handler(ws: ServerConnection) -> None:
        async for message in ws:
            packet = relay_view.decode(message if isinstance(message, bytes) else message.encode())
            if packet["type"] == "doc_init":
                await script(ws, packet)

    async def serve_script() -> None:
        async with serve(handler, "127.0.0.1", agent_specs(settings)[0].port):
            await stop.wait()

    task = asyncio.create_task(serve_script())
    try:
        async with mesh(settings.model_copy(update={"agents": settings.agents.split(",", 1)[1]})):
            metrics = await run_and_finish(MeshNetwork(
                settings, load_task(TASKS / "solar-farm"), tmp / "out", reporter=lambda _: None, lineup=lineup(settings)
            ))
        return metrics.model_dump()
    finally:
        stop.set()
        await task


async def test_dead_agent_ends_the_run_with_a_clear_status(tmp_path: Path) -> None:
    async def dies(ws: ServerConnection, doc: dict[str, Any]) -> None:
        await ws.close()

    s = settings_for(tmp_path, free_port_block(4), TOOLS)
    m = await run(tmp_path, s, {"0": dies})
    assert m["status"] == "agent_dead"
    assert m["error"] == "agent 0 (search) disconnected and no other 'search' agent is alive"
    assert m["agents"]["0"]["status"] == "dead"
    assert (tmp_path / "out/run_artifacts.tar.gz").is_file()
    assert_consistent(tmp_path / "out", m)


async def test_share_mode_hands_a_dead_agents_work_to_its_sibling(tmp_path: Path) -> None:
    async def dies(ws: ServerConnection, doc: dict[str, Any]) -> None:
        await ws.close()

    s = settings_for(tmp_path, free_port_block(8), TOOLS * 2)
    m = await run(tmp_path, s, {"0": dies})
    assert m["routing"] == "share"
    assert m["status"] == "ok", m["error"]
    assert "disconnected" in m["agents"]["0"]["note"] or "rejoined" in m["agents"]["0"]["note"]
    statuses = [json.loads(x)["status"] for x in (tmp_path / "out/frames.jsonl").read_text().splitlines()]
    assert "redelivered" in statuses
    assert_consistent(tmp_path / "out", m)


async def test_a_restarted_agent_is_taken_back_mid_run(tmp_path: Path) -> None:
    """Agent 6 (a triple replica) stops while the run is in flight and starts again on its port:
    the relay notices it, reconnects, sends it the run's doc_init again and counts it live."""
    s = settings_for(tmp_path, free_port_block(8), TOOLS * 2, routing="share")
    stops = {spec.node_id: asyncio.Event() for spec in agent_specs(s)}

    def agent(node: str) -> MeshAgent:
        spec = next(x for x in agent_specs(s) if x.node_id == node)
        conf = s.model_copy(update={"node_id": node, "tool": spec.tool, "port": spec.port})
        return MeshAgent(conf, get_tool(conf.tool), llm=FakeLLM(delay=0.3))  # type: ignore[arg-type]

    teams: list[dict[str, str]] = []
    restarted = asyncio.Event()

    async with asyncio.TaskGroup() as tasks:
        for node in stops:
            tasks.create_task(agent(node).serve(stops[node]))

        def observe(item: object) -> None:
            if not isinstance(item, tuple):
                return
            states = {a.node_id: a.state for a in item}
            teams.append(states)
            if len(teams) == 1:
                stops["6"].set()  # connected: stop agent 6 now, mid-run
            elif states["6"] == "lost" and not restarted.is_set():
                restarted.set()
                stops["6"] = asyncio.Event()
                tasks.create_task(agent("6").serve(stops["6"]))  # it comes back on its port

        net = MeshNetwork(s, load_task(TASKS / "solar-farm"), tmp_path / "out", reporter=lambda _: None,
                          observer=observe, lineup=lineup(s))  # type: ignore[arg-type]  # fmt: skip
        m = (await run_and_finish(net)).model_dump()
        for stop in stops.values():
            stop.set()
    assert m["status"] == "ok", m["error"]
    assert [t["6"] for t in teams] == ["connected", "lost", "connected"]
    assert m["agents"]["6"]["status"] == "connected" and "rejoined" in m["agents"]["6"]["note"]
    lines = [json.loads(x) for x in (tmp_path / "out/frames.jsonl").read_text().splitlines()]
    again = [x for x in lines if x["type"] == "doc_init" and x["status"] == "redelivered"]
    assert [x["dst"] for x in again] == [["6"]]
    assert_consistent(tmp_path / "out", m)


async def test_timeout_keeps_partial_metrics(tmp_path: Path) -> None:
    async def silent(ws: ServerConnection, doc: dict[str, Any]) -> None:
        return None

    s = settings_for(tmp_path, free_port_block(4), TOOLS, run_timeout=1)
    m = await run(tmp_path, s, {"0": silent})
    assert m["status"] == "timeout" and "RUN_TIMEOUT=1" in m["error"]
    assert m["pkt_cnt"] == 1 and m["prediction"] == "" and m["quality_score"] == 0.0
    assert_consistent(tmp_path / "out", m)


async def test_unreachable_agent_is_a_clear_connect_failure(tmp_path: Path) -> None:
    base = free_port_block(4)
    s = settings_for(tmp_path, base, TOOLS, connect_timeout=1)
    task = load_task(TASKS / "solar-farm")
    m = (await run_and_finish(MeshNetwork(s, task, tmp_path / "out", reporter=lambda _: None, lineup=lineup(s)))).model_dump()
    assert m["status"] == "connect_failed"
    assert f"agent 0 (search) not reachable at ws://127.0.0.1:{base}/ws" in m["error"]
    assert (tmp_path / "out/metrics.json").is_file()


async def test_absent_optional_agents_are_skipped(tmp_path: Path) -> None:
    base = free_port_block(4)
    s = settings_for(tmp_path, base, TOOLS)
    s = s.model_copy(update={"agents": s.agents + ",9=search@absent-agent.invalid:9999?"})
    m = await run(tmp_path, s)
    assert m["status"] == "ok" and "9" not in m["agents"]


async def test_a_strategy_whose_listed_team_is_absent_ends_at_once_naming_its_profile(tmp_path: Path) -> None:
    # compose's AGENTS lists the orchestrated team as optional; without its profile none resolves
    base = free_port_block(4)
    s = settings_for(tmp_path, base, TOOLS)
    absent = ",".join(f"{8 + i}={t}@absent-{t}.invalid:{9008 + i}?" for i, t in enumerate(["orchestrator", "research", "utility"]))
    s = s.model_copy(update={"agents": f"{s.agents},{absent}", "strategy": "orchestrated", "run_timeout": 120})
    m = await run(tmp_path, s)
    assert m["status"] == "connect_failed" and m["elapsed_ms"] < 10_000  # not RUN_TIMEOUT later
    assert "needs agents with the tools orchestrator, research, utility" in m["error"]
    assert "--profile orchestrated" in m["error"] and m["pkt_cnt"] == 0
    assert (tmp_path / "out/metrics.json").is_file()


def test_bad_agents_setting_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="bad AGENTS entry 'oops'"):
        agent_specs(load_settings(agents="oops"))
    with pytest.raises(ValueError, match="bad TOPICS entry 'extract'"):
        load_settings(topics="extract").topic_table()


async def test_an_agent_that_is_not_the_configured_one_is_refused(tmp_path: Path) -> None:
    # AGENTS says node 2 runs `reason`, but the agent on that port announces `triple`.
    base = free_port_block(4)
    s = settings_for(tmp_path, base, TOOLS)
    wrong = s.agents.replace("2=triple", "2=reason")
    async with mesh(s):
        m = (
            await run_and_finish(MeshNetwork(
                (swapped := s.model_copy(update={"agents": wrong})), load_task(TASKS / "solar-farm"), tmp_path / "out",
                reporter=lambda _: None, lineup=lineup(swapped)
            ))
        ).model_dump()  # fmt: skip
    assert m["status"] == "connect_failed"
    assert m["error"] == (
        f"agent at ws://127.0.0.1:{base + 2}/ws announces node '2' with tool 'triple', "
        "but AGENTS names node '2' with tool 'reason'"
    )
    assert_consistent(tmp_path / "out", m)


async def test_topic_routing_follows_announcements_or_the_topics_setting(tmp_path: Path) -> None:
    """Agents that announce nothing are routed by TOPICS; the relay imports no tool."""

    async def search_silently(ws: ServerConnection, doc: dict[str, Any]) -> None:
        chunks = doc["payload"]["chunks"]
        passages = [{"chunk": i, "score": 1.0, "text": c} for i, c in enumerate(chunks)]
        await ws.send(json.dumps({
            "type": "search_docs", "run_id": doc["run_id"], "src": "0", "seq": 1, "question": doc["question"],
            "payload": {"passages": passages, "n_chunks": len(chunks)},
        }).encode())  # fmt: skip

    s = settings_for(tmp_path, free_port_block(4), TOOLS, routing="topic", topics="search=doc_init")
    stop = asyncio.Event()
    spec0 = agent_specs(s)[0]
    silent = asyncio.create_task(_scripted(spec0.port, search_silently, stop, None))  # no announcement
    try:
        async with mesh(s.model_copy(update={"agents": s.agents.split(",", 1)[1]})):
            m = (
                await run_and_finish(MeshNetwork(s, load_task(TASKS / "solar-farm"), tmp_path / "out", reporter=lambda _: None, lineup=lineup(s)))
            ).model_dump()
    finally:
        stop.set()
        await silent
    assert m["status"] == "ok", m["error"]
    lines = [json.loads(x) for x in (tmp_path / "out/frames.jsonl").read_text().splitlines()]
    assert [x["dst"] for x in lines] == [["0"], ["1"], ["2"], ["3"], []]


async def test_the_same_agents_serve_runs_in_different_protocols(tmp_path: Path) -> None:
    """Each run names its protocol as a WebSocket subprotocol; agents started with `json`
    answer a `binary` run and an `a2a` run, and refuse `signed` when they hold no key."""
    s = settings_for(tmp_path, free_port_block(4), TOOLS, protocol="json")
    async with mesh(s):
        for protocol in ("binary", "a2a"):
            m = (
                await run_and_finish(MeshNetwork(
                    s.model_copy(update={"protocol": protocol}), load_task(TASKS / "solar-farm"),
                    tmp_path / protocol, reporter=lambda _: None, lineup=lineup(s)
                ))
            ).model_dump()  # fmt: skip
            assert m["status"] == "ok" and m["protocol"] == protocol and m["header_overhead"] > 0, m["error"]
            assert_consistent(tmp_path / protocol, m)
    keyless = generate_keys(tmp_path / "relay-keys-only", ["network"])
    agents_without_keys = s.model_copy(update={"keys_dir": tmp_path / "no-keys"})
    async with mesh(agents_without_keys):
        m = (
            await run_and_finish(MeshNetwork(
                s.model_copy(update={"protocol": "signed", "keys_dir": keyless}), load_task(TASKS / "solar-farm"),
                tmp_path / "signed", reporter=lambda _: None, lineup=lineup(s)
            ))
        ).model_dump()  # fmt: skip
    assert m["status"] == "connect_failed"
    assert "does not speak protocol 'signed'" in m["error"]


async def test_a_log_write_that_fails_ends_the_run_storage_error_and_metrics_agree_with_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk refuses the batch holding the final answer, then recovers: the answer, which the
    log lacks, is neither sent nor reported, and metrics.json counts what the log holds."""
    import errno

    import gaiamesh.mesh.relay as relay_module
    from gaiamesh.evaluation.audit import audit
    from gaiamesh.mesh.records import FrameLog

    class RefusesTheAnswer(FrameLog):
        def write(self, records: list[Any]) -> None:
            if any(r.tag == "final_answer" for r in records):
                raise OSError(errno.ENOSPC, "No space left on device")
            super().write(records)

    monkeypatch.setattr(relay_module, "FrameLog", RefusesTheAnswer)
    s = settings_for(tmp_path, free_port_block(4), TOOLS)
    m = await run(tmp_path, s)
    assert m["status"] == "storage_error" and "No space left on device" in m["error"]
    assert m["error"].startswith("cannot write the frame log ") and m["prediction"] == "" and m["exact_match"] == 0
    lines = [json.loads(x) for x in (tmp_path / "out/frames.jsonl").read_text().splitlines()]
    assert [x["type"] for x in lines] == ["doc_init", "search_docs", "events", "triples"]  # no answer logged
    assert all(a == b for _, a, b in audit(tmp_path / "out"))
