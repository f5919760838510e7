"""bench-swarm-latency's pure part (targets from docker's JSON, figures per pair class, the table)
and its probe against a real agent on loopback (the measurement itself runs on a real swarm)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gaiamesh.bench.swarm import probe
from gaiamesh.bench.swarm.latency import (
    CROSS,
    SAME,
    Target,
    markdown,
    measure,
    per_agent,
    ports_by_service,
    ratios,
    summarise,
    target_of,
)
from gaiamesh.errors import DeployError
from gaiamesh.mesh.protocols import get_adapter

from ...agents.test_agent import serving

STACK_AGENTS = ("0=search@dns:tasks.agent-search:9000,1=extract@dns:tasks.agent-extract:9001,"
                "2=triple@dns:tasks.agent-triple:9002,3=reason@dns:tasks.agent-reason:9003,"
                "8=orchestrator@agent-orchestrator:9008?")  # fmt: skip


def task(state: str = "running", node: str = "n2", network: str = "gaiamesh_mesh") -> dict[str, Any]:
    """The fields of ``docker inspect --type task`` that are read."""
    return {"ID": "abcdefabcdef0123456789", "NodeID": node, "Status": {"State": state},
            "NetworksAttachments": [{"Network": {"Spec": {"Name": "ingress"}}, "Addresses": ["10.0.0.7/24"]},
                                    {"Network": {"Spec": {"Name": network}}, "Addresses": ["10.0.1.5/24"]}]}  # fmt: skip


def test_the_agent_services_come_from_the_dns_entries_of_agents() -> None:
    assert ports_by_service(STACK_AGENTS) == {"agent-search": 9000, "agent-extract": 9001, "agent-triple": 9002,
                                              "agent-reason": 9003}  # fmt: skip


def test_a_running_task_is_a_target_at_its_overlay_address() -> None:
    hosts = {"n1": "swarm-1", "n2": "swarm-2"}
    got = target_of(task(), "gaiamesh_agent-search", 9000, hosts, "swarm-1", "gaiamesh_mesh")
    assert got == Target("gaiamesh_agent-search", "abcdefabcdef", "swarm-2", "10.0.1.5", 9000, False)
    assert got.pair == CROSS
    same = target_of(task(node="n1"), "gaiamesh_agent-search", 9000, hosts, "swarm-1", "gaiamesh_mesh")
    assert same is not None and same.pair == SAME
    assert target_of(task(state="starting"), "s", 9000, hosts, "swarm-1", "gaiamesh_mesh") is None
    assert target_of(task(network="other_mesh"), "s", 9000, hosts, "swarm-1", "gaiamesh_mesh") is None


def targets_and_samples() -> tuple[list[Target], list[dict[str, list[float]]]]:
    found = [Target("s_a", "t1", "swarm-1", "10.0.1.5", 9000, True),
             Target("s_a", "t2", "swarm-2", "10.0.1.6", 9000, False),
             Target("s_b", "t3", "swarm-3", "10.0.1.7", 9001, False)]  # fmt: skip
    samples = [{"ping": [1.0, 2.0, 3.0, 4.0], "frame": [2.0] * 4, "health": [5.0] * 4},
               {"ping": [2.0, 4.0, 6.0, 8.0], "frame": [3.0] * 4, "health": [10.0] * 4},
               {"ping": [3.0, 3.0, 3.0, 3.0], "frame": [5.0] * 4, "health": [12.0] * 4}]  # fmt: skip
    return found, samples


def test_samples_are_summarised_per_pair_class_with_nearest_rank_percentiles() -> None:
    found, samples = targets_and_samples()
    rows = summarise(found, samples)
    assert [(r.kind, r.group, r.agents, r.n) for r in rows] == [
        ("ping", SAME, 1, 4), ("ping", CROSS, 2, 8), ("frame", SAME, 1, 4), ("frame", CROSS, 2, 8),
        ("health", SAME, 1, 4), ("health", CROSS, 2, 8)]  # fmt: skip
    ping_same, ping_cross = rows[0], rows[1]
    assert (ping_same.p50_ms, ping_same.p95_ms, ping_same.mean_ms) == (2.0, 4.0, 2.5)
    assert (ping_cross.p50_ms, ping_cross.p95_ms, ping_cross.mean_ms) == (3.0, 8.0, 4.0)  # 2 3 3 3 3 4 6 8
    assert ratios(rows)["ping"] == {"p50_ms": 1.5, "p95_ms": 2.0, "mean_ms": 1.6}
    assert ratios(rows)["health"] == {"p50_ms": 2.0, "p95_ms": 2.4, "mean_ms": 2.2}  # 10 and 12 against 5
    assert [r.group for r in per_agent(found, samples)[:3]] == ["s_a@swarm-1", "s_a@swarm-2", "s_b@swarm-3"]


def test_a_class_without_agents_gets_no_row_and_no_ratio() -> None:
    found, samples = targets_and_samples()
    rows = summarise(found[1:], samples[1:])
    assert {r.group for r in rows} == {CROSS}
    assert ratios(rows) == {}


def test_the_table_has_a_ratio_line_under_each_measure() -> None:
    found, samples = targets_and_samples()
    table = markdown(summarise(found, samples), 2048).splitlines()
    assert table[0].startswith("| measure | pairs | agents | round trips | p50 ms")
    assert "| WebSocket ping | same-node | 1 | 4 | 2.000 | 4.000 | 2.500 |" in table
    assert "| WebSocket ping | cross / same | | | 1.50× | 2.00× | 1.60× |" in table
    assert any(line.startswith("| frame of 2,048 B + ping | cross-node | 2 | 8 |") for line in table)
    assert len(table) == 2 + 3 * 3


def test_the_probe_frame_has_the_size_asked_and_is_a_valid_packet() -> None:
    blob = probe.frame(2048)
    assert len(blob) == 2048
    packet = get_adapter("json").decode_packet(blob)
    assert packet.type == "result" and packet.run_id == "latency-probe"
    assert len(probe.frame(10)) > 10  # never below the bare envelope


async def test_the_probe_times_a_real_agent_which_drops_its_frames(tmp_path: Path) -> None:
    async with serving(tmp_path, "0", "search") as port:
        samples = await probe.measure([("127.0.0.1", port)], count=5, warmup=2, blob=probe.frame(2048),
                                      ready_timeout=10)  # fmt: skip
    [got] = samples
    assert {k: len(v) for k, v in got.items()} == {"ping": 5, "frame": 5, "health": 5}
    assert all(0 < ms < 5000 for values in got.values() for ms in values)
    # accepted and dropped: no run folder, nothing logged as rejected
    assert not (tmp_path / "0" / "latency-probe").exists()
    log = tmp_path / "0" / "agent.log"
    assert not log.exists() or not [json.loads(x) for x in log.read_text().splitlines()]


class FakeDocker:
    """A swarm whose spread of agent-search never completes: what ``measure`` asks of docker."""

    SPEC = {"TaskTemplate": {"Placement": {"Constraints": ["node.labels.gaiamesh.agents == true"]}},
            "Mode": {"Replicated": {"Replicas": 1}}}  # fmt: skip

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, *args: str) -> str:
        self.calls.append(args)
        rolled_back = any(c[:2] == ("service", "rollback") for c in self.calls)
        if args[0] == "info":
            return "node-1\n"
        if args[:2] == ("service", "ps"):
            return "node-1\n" if "{{.Node}}" in args else "Running 2 seconds ago\n"
        if args[:2] == ("ps", "-q"):
            return "abc123\n"
        if args[:2] == ("node", "ls"):
            return "Ready Active\nReady Active\nReady Active\n"
        if args[:2] == ("service", "inspect"):
            fmt = args[3]
            if "ContainerSpec.Env" in fmt:
                return json.dumps([f"AGENTS={STACK_AGENTS}"])
            if fmt == "{{json .Spec}}":
                return json.dumps(self.SPEC)
            return "rollback_completed\n" if rolled_back else "updating\n"
        return ""


def test_a_spread_that_does_not_complete_is_rolled_back(tmp_path: Path) -> None:
    docker = FakeDocker()
    with pytest.raises(DeployError, match="not completed"):
        measure(docker, "gaiamesh", "agent-search", 5, 0, 2048, 0, tmp_path, say=lambda _line: None)  # type: ignore[arg-type]
    [update] = [c for c in docker.calls if c[:2] == ("service", "update")]
    assert update == ("service", "update", "-d", "--constraint-rm", "node.labels.gaiamesh.agents == true",
                      "--replicas", "3", "--replicas-max-per-node", "1", "gaiamesh_agent-search")  # fmt: skip
    assert ("service", "rollback", "-d", "gaiamesh_agent-search") in docker.calls
    assert not any(c[:1] == ("exec",) for c in docker.calls)
