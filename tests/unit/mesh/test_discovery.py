"""Agents found through DNS at the start of a run and during it (``dns:`` entries of AGENTS).

The pure part (entries + addresses -> agents) by plain calls; the relay with two real agents of
one tool on 127.0.0.1 and 127.0.0.2 (Linux routes 127.0.0.0/8 to loopback), behind one name
that an injected resolver answers, as swarm's ``tasks.<service>`` would."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from gaiamesh.agents.agent import MeshAgent
from gaiamesh.agents.catalog import get_tool
from gaiamesh.agents.teams import agent_specs, default_agents, lineup
from gaiamesh.errors import ConfigError
from gaiamesh.evaluation.audit import audit
from gaiamesh.evaluation.finish import run_and_finish
from gaiamesh.evaluation.metrics import read_log, totals_from_log
from gaiamesh.mesh.discovery import discover, expand, present, replica_id, resolve_ipv4, unresolved
from gaiamesh.mesh.protocols import generate_keys
from gaiamesh.mesh.records import AgentMetrics, FrameRecord, Totals
from gaiamesh.mesh.relay import MeshNetwork
from gaiamesh.settings import AgentSpec, Settings, load_settings, parse_agents
from gaiamesh.tasks import load_task

from ...conftest import TASKS, free_port_block
from ..fakes import FakeLLM
from .test_core import FOUR, core, frame

# The AGENTS line compose.yaml gives the relay today.
COMPOSE_AGENTS = (
    "0=search@agent-search:9000,1=extract@agent-extract:9001,2=triple@agent-triple:9002,3=reason@agent-reason:9003,"
    "4=search@agent-search-2:9004?,5=extract@agent-extract-2:9005?,6=triple@agent-triple-2:9006?,"
    "7=reason@agent-reason-2:9007?,8=orchestrator@agent-orchestrator:9008?,9=research@agent-research:9009?,"
    "10=utility@agent-utility:9010?"
)


async def no_dns(name: str, port: int) -> list[str]:
    raise AssertionError(f"{name} looked up, but no entry names dns:")


def test_todays_agents_lines_give_the_same_specs() -> None:
    assert parse_agents(default_agents(9000)) == [
        AgentSpec("0", "search", "127.0.0.1", 9000, False),
        AgentSpec("1", "extract", "127.0.0.1", 9001, False),
        AgentSpec("2", "triple", "127.0.0.1", 9002, False),
        AgentSpec("3", "reason", "127.0.0.1", 9003, False),
    ]
    for line in (default_agents(9000), default_agents(9000, strategy="orchestrated"), COMPOSE_AGENTS):
        specs = parse_agents(line)
        assert all(s.dns_name is None and s.entry == "" and s.announces == s.node_id for s in specs)
        assert expand(specs, {}) == specs
        assert expand(specs, {"agent-search": ["10.0.0.9"]}) == specs  # only dns: entries are resolved
    compose = parse_agents(COMPOSE_AGENTS)
    assert compose[4] == AgentSpec("4", "search", "agent-search-2", 9004, True)
    assert compose[0].url == "ws://agent-search:9000/ws"


async def test_present_looks_up_no_name_for_entries_without_dns() -> None:
    specs = parse_agents(default_agents(9000))
    assert await present(specs, resolve=no_dns) == specs


def test_a_dns_entry_parses_with_its_name() -> None:
    [spec] = parse_agents("0=search@dns:tasks.agent-search:9000?")
    assert spec == AgentSpec("0", "search", "dns:tasks.agent-search", 9000, True)
    assert spec.dns_name == "tasks.agent-search"
    with pytest.raises(ConfigError, match="dns: needs a name"):
        parse_agents("0=search@dns::9000")


def test_each_address_becomes_one_agent_with_a_stable_id() -> None:
    specs = parse_agents("0=search@dns:tasks.agent-search:9000,1=extract@agent-extract:9001")
    got = expand(specs, {"tasks.agent-search": ["10.0.1.12", "10.0.1.5", "10.0.1.12"]})
    assert got == [
        AgentSpec("0.10-0-1-5", "search", "10.0.1.5", 9000, False, "0"),  # sorted as addresses, not strings
        AgentSpec("0.10-0-1-12", "search", "10.0.1.12", 9000, False, "0"),
        AgentSpec("1", "extract", "agent-extract", 9001, False),
    ]
    assert [s.announces for s in got] == ["0", "0", "1"]
    assert got[0].url == "ws://10.0.1.5:9000/ws"
    assert replica_id("0", "10.0.1.5") == "0.10-0-1-5"
    # A name that resolved to nothing gives no agent; the relay says why (unresolved).
    assert expand(specs, {}) == [specs[1]]


def test_a_node_id_taken_by_a_replica_is_refused() -> None:
    specs = parse_agents("0=search@dns:s:9000,0.10-0-0-1=search@h:9001")
    with pytest.raises(ConfigError, match="duplicate node ids"):
        expand(specs, {"s": ["10.0.0.1"]})


def test_a_required_dns_entry_without_replicas_is_named() -> None:
    configured = parse_agents("0=search@dns:tasks.a:9000,4=search@dns:tasks.b:9004?,1=extract@h:9001")
    assert unresolved(configured, expand(configured, {"tasks.a": ["10.0.0.2"]})) is None
    why = unresolved(configured, expand(configured, {"tasks.b": ["10.0.0.3"]}))
    assert why is not None and "entry 0 (search) names dns:tasks.a" in why and "entry 4" not in why


async def test_discover_waits_for_a_required_name_and_not_for_an_optional_one() -> None:
    asked: list[str] = []

    async def resolver(name: str, port: int) -> list[str]:
        asked.append(name)
        return ["10.0.0.7"] if name == "late" and asked.count("late") >= 3 else []

    specs = parse_agents("0=search@dns:late:9000,4=search@dns:never:9004?")
    got = await discover(specs, wait=5.0, resolve=resolver)
    assert [s.node_id for s in got] == ["0.10-0-0-7"]
    assert asked.count("late") == 3 and asked.count("never") == 1
    # A required name that never resolves: looked up again only until the wait runs out.
    assert await discover(parse_agents("0=search@dns:never:9000"), wait=0.0, resolve=resolver) == []


async def test_resolve_ipv4_uses_the_system_resolver() -> None:
    assert await resolve_ipv4("127.0.0.2", 9000) == ["127.0.0.2"]
    assert await resolve_ipv4("no-such-host.invalid", 9000) == []


# --- the relay with two replicas of one tool behind one name ----------------------------------

REPLICAS = ["127.0.0.1", "127.0.0.2"]


def replicated(tmp: Path, base: int, **kw: Any) -> Settings:
    agents = f"0=search@dns:tasks.agent-search:{base},1=extract@127.0.0.1:{base + 1}," \
             f"2=triple@127.0.0.1:{base + 2},3=reason@127.0.0.1:{base + 3}"  # fmt: skip
    keys = generate_keys(tmp / "keys", ["network", "0", "1", "2", "3"])
    defaults: dict[str, Any] = dict(
        agents=agents, workspace_root=tmp / "ws", run_timeout=20, connect_timeout=10, keys_dir=keys
    )
    return load_settings(**{**defaults, **kw})


async def resolver(name: str, port: int) -> list[str]:
    return list(REPLICAS) if name == "tasks.agent-search" else []


async def run_replicated(tmp: Path, s: Settings, node_ids: dict[str, str] | None = None) -> dict[str, Any]:
    """Serve agents 1-3 on 127.0.0.1 and two search replicas, both NODE_ID=0 (as replicas of one
    service share it; ``node_ids`` overrides by address), on 127.0.0.1 and 127.0.0.2 at one port,
    each with its own workspace (a swarm replica has its own volume). Run the relay."""
    stop = asyncio.Event()
    tasks = []
    for spec in agent_specs(s):
        hosts = REPLICAS if spec.dns_name else [spec.host]
        for host in hosts:
            node = (node_ids or {}).get(host, spec.node_id) if spec.dns_name else spec.node_id
            conf = s.model_copy(update={
                "node_id": node, "tool": spec.tool, "port": spec.port, "agent_host": host,
                "workspace_root": tmp / f"ws-{host}",
            })  # fmt: skip
            tasks.append(asyncio.create_task(MeshAgent(conf, get_tool(conf.tool), llm=FakeLLM()).serve(stop)))  # type: ignore[arg-type]
    try:
        net = MeshNetwork(s, load_task(TASKS / "solar-farm"), tmp / "out", reporter=lambda _: None, resolve=resolver, lineup=lineup(s))
        return (await run_and_finish(net)).model_dump()
    finally:
        stop.set()
        await asyncio.gather(*tasks)


@pytest.mark.parametrize("protocol", ["json", "signed"])
async def test_the_relay_takes_every_replica_of_a_dns_entry(tmp_path: Path, protocol: str) -> None:
    s = replicated(tmp_path, free_port_block(4), protocol=protocol)
    m = await run_replicated(tmp_path, s)
    assert m["status"] == "ok", m["error"]
    assert m["prediction"] == "148 megawatts"
    assert m["routing"] == "share"  # two agents of one tool: auto shares
    replicas = ["0.127-0-0-1", "0.127-0-0-2"]
    assert sorted(m["agents"]) == [*replicas, "1", "2", "3"]
    assert all(m["agents"][r]["status"] == "connected" and m["agents"][r]["tool"] == "search" for r in replicas)
    lines = [json.loads(x) for x in (tmp_path / "out/frames.jsonl").read_text().splitlines()]
    assert not [x for x in lines if x["status"] == "rejected"]
    # doc_init went to one replica (share), and its answer is counted under that replica's id.
    [init] = [x for x in lines if x["type"] == "doc_init"]
    [searched] = [x for x in lines if x["src"] in replicas]
    assert searched["src"] in init["dst"] and searched["src"] == "0.127-0-0-1"  # the first turn: lowest address
    [other] = [r for r in replicas if r != searched["src"]]
    assert m["agents"][searched["src"]]["pkts_sent"] == 1 and m["agents"][other]["pkts_sent"] == 0
    assert "0" not in m["agents"]
    totals_match(tmp_path / "out", m)


async def test_a_replica_that_announces_another_node_id_is_refused(tmp_path: Path) -> None:
    s = replicated(tmp_path, free_port_block(4), connect_timeout=2)
    m = await run_replicated(tmp_path, s, node_ids={"127.0.0.2": "5"})
    assert m["status"] == "connect_failed"
    assert "announces node '5'" in m["error"] and "names node '0'" in m["error"]


async def test_a_required_dns_entry_that_resolves_to_nothing_ends_the_run_at_once(tmp_path: Path) -> None:
    async def nothing(name: str, port: int) -> list[str]:
        return []

    s = replicated(tmp_path, free_port_block(4), connect_timeout=0.5)
    net = MeshNetwork(s, load_task(TASKS / "solar-farm"), tmp_path / "out", reporter=lambda _: None, resolve=nothing, lineup=lineup(s))
    m = (await run_and_finish(net)).model_dump()
    assert m["status"] == "connect_failed"
    assert "names dns:tasks.agent-search, which resolves to no IPv4 address" in m["error"]


def totals_match(out: Path, metrics: dict[str, Any]) -> None:
    for key, value in totals_from_log(out / "frames.jsonl").items():
        assert metrics[key] == value, key


def test_the_core_takes_a_replicas_packets_under_the_entrys_node_id() -> None:
    """Replicas of a dns: entry stamp the entry's NODE_ID as src; the core counts each under its
    own id, and still refuses a src that is neither."""
    lineup = [("0.10-0-0-1", "search"), ("0.10-0-0-2", "search"), *FOUR[1:]]
    c = core(lineup, sources={"0.10-0-0-1": "0", "0.10-0-0-2": "0"})
    c.start("The farm has 148 MW.", "q?", 400, 0.0)
    ok = c.receive("0.10-0-0-2", frame(c, "0.10-0-0-2", src="0"), 1.0)
    assert ok.records[0].status == "accepted" and ok.records[0].src == "0.10-0-0-2"
    assert c.agents["0.10-0-0-2"].pkts_sent == 1 and c.agents["0.10-0-0-1"].pkts_sent == 0
    own_id = c.receive("0.10-0-0-1", frame(c, "0.10-0-0-1", seq=2), 1.1).records[0]
    other = c.receive("1", frame(c, "1", src="0"), 1.2).records[0]
    assert own_id.status == other.status == "rejected"
    assert own_id.error == "packet claims src '0.10-0-0-1' but arrived from agent '0.10-0-0-1' (which stamps '0')"
    assert other.error == "packet claims src '0' but arrived from agent '1'"


# --- replicas found and gone while the run goes on (DISCOVERY_INTERVAL) ------------------------

REASON = "tasks.agent-reason"
OLD, NEW = "3.127-0-0-1", "3.127-0-0-2"  # the reason replicas on 127.0.0.1 and 127.0.0.2


class HeldAgent(MeshAgent):
    """A real agent that starts on the work it consumes only once ``go`` is set (a test seam that
    holds the run at a known point), and answers it ``times`` times: the pipeline has one piece of
    work per stage, and two let both replicas of the next stage take one under ``share``."""

    def __init__(self, settings: Settings, go: asyncio.Event, times: int = 1) -> None:
        super().__init__(settings, get_tool(settings.tool), llm=FakeLLM())  # type: ignore[arg-type]
        self.go, self.times = go, times

    async def handle(self, packet: Any, ws: Any) -> None:
        if packet.type is not self.tool.consumes:
            await super().handle(packet, ws)
            return
        await self.go.wait()
        for _ in range(self.times):
            await super().handle(packet, ws)


def reasoned(tmp: Path, base: int, **kw: Any) -> Settings:
    """Agents 0-2 on 127.0.0.1; reason is a dns: entry, looked up every 50 ms during the run."""
    agents = f"0=search@127.0.0.1:{base},1=extract@127.0.0.1:{base + 1},2=triple@127.0.0.1:{base + 2}," \
             f"3=reason@dns:{REASON}:{base + 3}"  # fmt: skip
    keys = generate_keys(tmp / "keys", ["network", "0", "1", "2", "3"])
    defaults: dict[str, Any] = dict(agents=agents, workspace_root=tmp / "ws", run_timeout=20, connect_timeout=10,
                                    keys_dir=keys, discovery_interval=0.05)  # fmt: skip
    return load_settings(**{**defaults, **kw})


def conf(s: Settings, tmp: Path, node: str, host: str = "127.0.0.1") -> Settings:
    spec = next(x for x in agent_specs(s) if x.node_id == node)
    return s.model_copy(update={"node_id": node, "tool": spec.tool, "port": spec.port, "agent_host": host,
                                "workspace_root": tmp / f"ws-{host}"})  # fmt: skip


async def run_live(
    tmp: Path, s: Settings, agents: dict[str, MeshAgent], resolve: Any, observe: Any, gates: list[asyncio.Event]
) -> tuple[dict[str, Any], dict[str, asyncio.Event]]:
    """Serve ``agents`` (by name, each with a stop of its own, which ``observe`` may set), run the
    relay; release every gate at the end so held agents finish."""
    stops = {name: asyncio.Event() for name in agents}
    async with asyncio.TaskGroup() as tasks:
        for name, agent in agents.items():
            tasks.create_task(agent.serve(stops[name]))
        await asyncio.gather(*(a.listening.wait() for a in agents.values()))
        try:
            net = MeshNetwork(s, load_task(TASKS / "solar-farm"), tmp / "out", reporter=print,  # shown on failure
                              observer=lambda item: observe(item, stops), resolve=resolve, lineup=lineup(s))  # fmt: skip
            m = (await run_and_finish(net)).model_dump()
        finally:
            for event in [*stops.values(), *gates]:
                event.set()
    return m, stops


def states(item: object) -> dict[str, tuple[str, str | None]]:
    """The live view's team, by node id: (state, reason); {} for a frame record or a note."""
    return {a.node_id: (a.state, a.reason) for a in item} if isinstance(item, tuple) else {}


def log_agrees(out: Path, m: dict[str, Any]) -> list[dict[str, Any]]:
    """``gaiamesh audit`` finds every counter equal to the frame log, the frame count is the
    log's length, and each agent's counts (a replica's under its own id) fold from the log."""
    assert [(k, a) for k, a, b in audit(out) if a != b] == []
    lines = [json.loads(x) for x in (out / "frames.jsonl").read_text().splitlines()]
    assert m["frames"] == len(lines)
    folded = {n: AgentMetrics(n, a["tool"]) for n, a in m["agents"].items()}
    totals = Totals()
    for record in read_log(out / "frames.jsonl"):
        totals.add(record, folded)
    for n, a in folded.items():
        for key in ("pkts_sent", "pkts_received", "bytes_sent", "bytes_received", "rejected"):
            assert m["agents"][n][key] == getattr(a, key), (n, key)
    return lines


async def test_a_replica_that_appears_mid_run_joins_and_takes_work(tmp_path: Path) -> None:
    """DNS gives one reason replica at the start and two afterwards: the second is connected
    mid-run, auto routing turns to share, and it gets the run and one of the two triples."""
    s = reasoned(tmp_path, free_port_block(4))
    lookups: list[str] = []

    async def resolve(name: str, port: int) -> list[str]:
        lookups.append(name)
        return ["127.0.0.1"] if len(lookups) == 1 else ["127.0.0.1", "127.0.0.2"]

    go = asyncio.Event()  # triple works once the new replica is in the run

    def observe(item: object, stops: dict[str, asyncio.Event]) -> None:
        if states(item).get(NEW, ("",))[0] == "connected":
            go.set()

    agents = {n: MeshAgent(conf(s, tmp_path, n), get_tool(t), llm=FakeLLM())  # type: ignore[arg-type]
              for n, t in (("0", "search"), ("1", "extract"))}  # fmt: skip
    agents["2"] = HeldAgent(conf(s, tmp_path, "2"), go, times=2)
    for host in REPLICAS:
        agents[host] = MeshAgent(conf(s, tmp_path, "3", host), get_tool("reason"), llm=FakeLLM())  # type: ignore[arg-type]
    m, _ = await run_live(tmp_path, s, agents, resolve, observe, [go])
    assert m["status"] == "ok", m["error"]
    assert set(lookups) == {REASON} and len(lookups) >= 2
    assert m["routing"] == "share"
    assert m["agents"][NEW]["status"] == "connected" and m["agents"][NEW]["note"].startswith("joined at")
    lines = log_agrees(tmp_path / "out", m)
    [init, again] = [x for x in lines if x["type"] == "doc_init"]
    assert again["dst"] == [NEW] and again["status"] == "redelivered" and again["t_ms"] > init["t_ms"]
    triples = [x["dst"] for x in lines if x["type"] == "triples"]
    assert sorted(triples) == [[OLD], [NEW]]  # share: one each
    assert m["agents"][NEW]["pkts_received"] == 2
    [joined] = m["membership"]
    assert (joined["node_id"], joined["tool"], joined["event"]) == (NEW, "reason", "joined")
    assert init["t_ms"] < joined["t_ms"] <= again["t_ms"]


async def test_a_replica_lost_and_moved_to_a_new_address_hands_its_work_to_the_new_one(tmp_path: Path) -> None:
    """Swarm reschedules the only reason replica on another node: the old one stops while it holds
    the triples, its address leaves DNS and a new one comes. The old replica is let go, the new
    one joins, takes the waiting work (REJOIN_GRACE) and answers; nothing is lost from the books."""
    s = reasoned(tmp_path, free_port_block(4), rejoin_grace=10)
    dns = ["127.0.0.1"]

    async def resolve(name: str, port: int) -> list[str]:
        return list(dns) if name == REASON else []

    held = asyncio.Event()  # the old replica never gets to answer: released at the end only

    def observe(item: object, stops: dict[str, asyncio.Event]) -> None:
        if isinstance(item, FrameRecord) and item.type == "triples" and OLD in item.dst:
            stops["127.0.0.1"].set()  # the node goes away with the work it holds
        elif states(item).get(OLD, ("",))[0] == "lost":
            dns[:] = ["127.0.0.2"]  # swarm's replacement task, at a new address

    agents = {n: MeshAgent(conf(s, tmp_path, n), get_tool(t), llm=FakeLLM())  # type: ignore[arg-type]
              for n, t in (("0", "search"), ("1", "extract"), ("2", "triple"))}  # fmt: skip
    agents["127.0.0.1"] = HeldAgent(conf(s, tmp_path, "3", "127.0.0.1"), held)
    agents["127.0.0.2"] = MeshAgent(conf(s, tmp_path, "3", "127.0.0.2"), get_tool("reason"), llm=FakeLLM())  # type: ignore[arg-type]
    m, _ = await run_live(tmp_path, s, agents, resolve, observe, [held])
    assert m["status"] == "ok", m["error"]
    assert m["agents"][OLD]["status"] == "left" and "let go" in m["agents"][OLD]["note"]
    assert m["agents"][NEW]["status"] == "connected"
    lines = log_agrees(tmp_path / "out", m)
    [first, again] = [x for x in lines if x["type"] == "triples"]
    assert first["status"] == "accepted" and OLD in first["dst"]
    assert again["status"] == "redelivered" and again["dst"] == [NEW]
    [answer] = [x for x in lines if x["type"] == "data_event"]
    assert answer["src"] == NEW and answer["status"] == "accepted"
    events = [(e["node_id"], e["event"]) for e in m["membership"]]
    assert events == [(OLD, "lost"), (OLD, "left"), (NEW, "joined")]
    lost_ms, joined_ms = m["membership"][0]["t_ms"], m["membership"][2]["t_ms"]
    assert 0 < lost_ms < joined_ms < answer["t_ms"]  # loss to routable again: measurable


async def test_a_replica_that_leaves_mid_run_is_let_go_and_the_run_finishes_on_the_other(tmp_path: Path) -> None:
    """Two reason replicas; one stops and its address leaves DNS before the triples are made:
    it is let go (no longer reached for) and the run ends ok through the other."""
    s = reasoned(tmp_path, free_port_block(4))
    dns = list(REPLICAS)

    async def resolve(name: str, port: int) -> list[str]:
        return list(dns) if name == REASON else []

    go = asyncio.Event()
    seen: list[dict[str, tuple[str, str | None]]] = []

    def observe(item: object, stops: dict[str, asyncio.Event]) -> None:
        if not (team := states(item)):
            return
        seen.append(team)
        if len(seen) == 1:
            stops["127.0.0.2"].set()
        elif team[NEW][0] == "lost" and (team[NEW][1] or "").startswith("let go"):
            go.set()  # let go: now the work may flow
        elif team[NEW][0] == "lost":
            dns[:] = ["127.0.0.1"]

    agents = {n: MeshAgent(conf(s, tmp_path, n), get_tool(t), llm=FakeLLM())  # type: ignore[arg-type]
              for n, t in (("0", "search"), ("1", "extract"))}  # fmt: skip
    agents["2"] = HeldAgent(conf(s, tmp_path, "2"), go)
    for host in REPLICAS:
        agents[host] = MeshAgent(conf(s, tmp_path, "3", host), get_tool("reason"), llm=FakeLLM())  # type: ignore[arg-type]
    m, _ = await run_live(tmp_path, s, agents, resolve, observe, [go])
    assert m["status"] == "ok", m["error"]
    assert m["agents"][NEW]["status"] == "left" and m["agents"][OLD]["status"] == "connected"
    assert [(e["node_id"], e["event"]) for e in m["membership"]] == [(NEW, "lost"), (NEW, "left")]
    lines = log_agrees(tmp_path / "out", m)
    assert [x["dst"] for x in lines if x["type"] == "triples"] == [[OLD]]
    assert not [x for x in lines if NEW in x["dst"] and x["t_ms"] > m["membership"][0]["t_ms"]]
