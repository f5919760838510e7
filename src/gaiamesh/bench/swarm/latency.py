"""Round trips from the relay's place to agents on its own node and on other nodes of a deployed
swarm stack (``gaiamesh bench-swarm-latency``, issue 36: cross-node frame latency against
same-node).

The stack places agents on the nodes labelled ``gaiamesh.agents=true``; on the test cluster no
agent shares the relay's node. So one agent service (``--service``, default ``agent-search``)
is spread for the measurement: its placement constraints are dropped and it runs one replica
on every node (``--replicas-max-per-node 1``), the relay's node included. The same service,
image and code then sit on both sides of the comparison. ``docker service rollback`` gives the
service back its previous spec afterwards (constraints, replica count), also when the
measurement fails.

From inside the network service's container (where the relay runs, on the stack's overlay
network) a probe (``swarm/probe.py``, piped to that container's ``python3``) connects to
every running agent task's address as the relay does, and times, going round the agents in
turn so that the machine's other load falls on every agent alike:

- ``ping``: a WebSocket ping (4 bytes) and its pong;
- ``frame``: a frame of ``frame_bytes`` (a ``result`` packet, which the agent decodes and drops)
  followed by a ping, until the pong (a control frame carries 125 bytes at most);
- ``health``: a new TCP connection, ``GET /health``, the answer, the close.

A pair is ``same-node`` when the agent's task runs on the relay's node, else ``cross-node``
(over the overlay network's VXLAN). ``summarise``, ``markdown`` and the parsers are pure;
the rest runs the ``docker`` CLI (``DOCKER_HOST``: the engine of the node that runs the
network service, a manager).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ...deploy.swarmrun import Docker
from ...errors import DeployError
from ...evaluation.wirecost import percentile
from ...settings import parse_agents

KINDS = ("ping", "frame", "health")
SAME, CROSS = "same-node", "cross-node"
NETWORK_SERVICE = "network"
MESH_NETWORK = "mesh"  # the stack's overlay network (deploy/swarm.py), named <stack>_mesh by swarm
PROBE = Path(__file__).with_name("probe.py")
POLL_S = 1.0  # between looks at an update or rollback: swarm gives the CLI no event for them

Samples = Mapping[str, Sequence[float]]  # per kind, milliseconds


@dataclass(frozen=True)
class Target:
    """One running agent task, as the relay reaches it."""

    service: str  # the stack's service name, e.g. gaiamesh_agent-search
    task: str
    node: str  # the host name of its node
    address: str  # on the stack's overlay network
    port: int
    same_node: bool  # whether it runs on the relay's node

    @property
    def pair(self) -> str:
        return SAME if self.same_node else CROSS


@dataclass(frozen=True)
class Row:
    """One measure's round trips over a group of agents (a pair class, or one agent)."""

    kind: str
    group: str
    agents: int
    n: int
    p50_ms: float
    p95_ms: float
    mean_ms: float


# --- pure ---------------------------------------------------------------------------------------
def ports_by_service(agents: str) -> dict[str, int]:
    """The agent services of an ``AGENTS`` line and their ports: each ``dns:tasks.<service>``
    entry (the stack file writes one per agent service of the stack)."""
    ports: dict[str, int] = {}
    for spec in parse_agents(agents):
        if spec.dns_name and spec.dns_name.startswith("tasks."):
            ports[spec.dns_name.removeprefix("tasks.")] = spec.port
    return ports


def target_of(task: Mapping[str, Any], service: str, port: int, hostnames: Mapping[str, str], relay_node: str,
              network: str) -> Target | None:  # fmt: skip
    """A task of ``docker inspect --type task`` as a target: None unless it runs and has an
    address on ``network``."""
    if task.get("Status", {}).get("State") != "running":
        return None
    for attachment in task.get("NetworksAttachments") or []:
        if attachment.get("Network", {}).get("Spec", {}).get("Name") == network and attachment.get("Addresses"):
            node = hostnames.get(task.get("NodeID", ""), task.get("NodeID", "?"))
            address = attachment["Addresses"][0].split("/")[0]
            return Target(service, task["ID"][:12], node, address, port, node == relay_node)
    return None


def _row(kind: str, group: str, agents: int, values: Sequence[float]) -> Row:
    p50, p95 = percentile(values, 0.5), percentile(values, 0.95)
    assert p50 is not None and p95 is not None  # callers pass samples only
    return Row(kind, group, agents, len(values), round(p50, 3), round(p95, 3), round(statistics.fmean(values), 3))


def summarise(targets: Sequence[Target], samples: Sequence[Samples]) -> list[Row]:
    """Per measure, a row for each pair class that has samples (``samples[i]`` is
    ``targets[i]``'s), same-node first."""
    rows = []
    for kind in KINDS:
        for pair in (SAME, CROSS):
            group = [s[kind] for t, s in zip(targets, samples, strict=True) if t.pair == pair and s.get(kind)]
            if group:
                rows.append(_row(kind, pair, len(group), [v for values in group for v in values]))
    return rows


def per_agent(targets: Sequence[Target], samples: Sequence[Samples]) -> list[Row]:
    """Per measure and agent task, one row (its group: ``service@node``)."""
    return [_row(kind, f"{t.service}@{t.node}", 1, s[kind])
            for kind in KINDS for t, s in zip(targets, samples, strict=True) if s.get(kind)]  # fmt: skip


def ratios(rows: Sequence[Row]) -> dict[str, dict[str, float]]:
    """Per measure with both pair classes: cross-node over same-node, for p50, p95 and mean."""
    by = {(r.kind, r.group): r for r in rows}
    out: dict[str, dict[str, float]] = {}
    for kind in KINDS:
        same, cross = by.get((kind, SAME)), by.get((kind, CROSS))
        if same and cross:
            out[kind] = {stat: round(getattr(cross, stat) / getattr(same, stat), 2)
                         for stat in ("p50_ms", "p95_ms", "mean_ms") if getattr(same, stat) > 0}  # fmt: skip
    return out


def markdown(rows: Sequence[Row], frame_bytes: int | None = None) -> str:
    """A Markdown table of ``rows``, with a ``cross / same`` line under each measure that has
    both pair classes."""
    names = {"ping": "WebSocket ping", "frame": f"frame of {frame_bytes:,} B + ping" if frame_bytes else "frame + ping",
             "health": "GET /health (new connection)"}  # fmt: skip
    lines = ["| measure | pairs | agents | round trips | p50 ms | p95 ms | mean ms |", "|---|---|---|---|---|---|---|"]
    ratio = ratios(rows)
    for kind in KINDS:
        for r in (r for r in rows if r.kind == kind):
            lines.append(f"| {names[kind]} | {r.group} | {r.agents} | {r.n} | {r.p50_ms:.3f} | {r.p95_ms:.3f} | {r.mean_ms:.3f} |")
        if kind in ratio:
            x = ratio[kind]
            cells = " | ".join(f"{x[s]:.2f}×" if s in x else "-" for s in ("p50_ms", "p95_ms", "mean_ms"))
            lines.append(f"| {names[kind]} | cross / same | | | {cells} |")
    return "\n".join(lines) + "\n"


# --- docker ---------------------------------------------------------------------------------------
def relay_container(docker: Docker, stack: str) -> tuple[str, str]:
    """The network service's container on this engine, and this engine's node: the probe runs
    where the relay runs, so DOCKER_HOST must be that node's engine."""
    service = f"{stack}_{NETWORK_SERVICE}"
    nodes = docker("service", "ps", service, "--filter", "desired-state=running", "--format", "{{.Node}}").split()
    here = docker("info", "--format", "{{.Name}}").strip()
    if here not in nodes:
        raise DeployError(f"{service} runs on {nodes or 'no node'}, and this engine is {here}: point DOCKER_HOST "
                          "at the engine of the node that runs it (a manager)")  # fmt: skip
    ids = docker("ps", "-q", "--filter", f"label=com.docker.swarm.service.name={service}").split()
    if not ids:
        raise DeployError(f"no running container of {service} on {here}")
    return ids[0], here


def agent_ports(docker: Docker, stack: str) -> dict[str, int]:
    """The agent services the relay reaches, from its AGENTS (ports by service's short name)."""
    env = json.loads(docker("service", "inspect", "--format", "{{json .Spec.TaskTemplate.ContainerSpec.Env}}",
                            f"{stack}_{NETWORK_SERVICE}"))  # fmt: skip
    line = next((e.split("=", 1)[1] for e in env or [] if e.startswith("AGENTS=")), "")
    ports = ports_by_service(line)
    if not ports:
        raise DeployError(f"{stack}_{NETWORK_SERVICE}'s AGENTS names no dns:tasks.<service> entry: {line!r}")
    return ports


def targets(docker: Docker, stack: str, ports: Mapping[str, int], relay_node: str) -> list[Target]:
    """Every running task of the agent services in ``ports``, with its node and address."""
    hostnames = dict(line.split(" ", 1) for line in docker("node", "ls", "--format", "{{.ID}} {{.Hostname}}").splitlines())
    found: list[Target] = []
    for short, port in ports.items():
        service = f"{stack}_{short}"
        ids = docker("service", "ps", "-q", "--filter", "desired-state=running", service).split()
        tasks = json.loads(docker("inspect", "--type", "task", *ids)) if ids else []
        found += [t for task in tasks if (t := target_of(task, service, port, hostnames, relay_node,
                                                         f"{stack}_{MESH_NETWORK}"))]  # fmt: skip
    return found


def _update_state(docker: Docker, service: str) -> str:
    return docker("service", "inspect", "--format", "{{if .UpdateStatus}}{{.UpdateStatus.State}}{{end}}", service).strip()


def _wait_update(docker: Docker, service: str, done: str, failed: tuple[str, ...], timeout: float) -> None:
    """Until the service's update (or rollback) is ``done`` and each of its replicas runs.
    ``docker service update`` clears the previous update's state, so a stale ``done`` is not
    read as this one's."""
    deadline = time.monotonic() + timeout
    while True:
        state = _update_state(docker, service)
        if state in failed:
            raise DeployError(f"{service}: its update ended {state} (see docker service ps {service})")
        lines = docker("service", "ps", service, "--filter", "desired-state=running", "--format",
                       "{{.CurrentState}}").splitlines()  # fmt: skip
        replicas = _placement(docker, service)["replicas"]
        if state == done and len(lines) == replicas and all(x.startswith("Running") for x in lines):
            return
        if time.monotonic() > deadline:
            raise DeployError(f"{service}: not {done} with {replicas} replicas running after {timeout:.0f} s "
                              f"(it is {state or 'not updating'}: {lines})")  # fmt: skip
        time.sleep(POLL_S)  # polling (see POLL_S)


def _placement(docker: Docker, service: str) -> dict[str, Any]:
    spec = json.loads(docker("service", "inspect", "--format", "{{json .Spec}}", service))
    return {"placement": spec["TaskTemplate"].get("Placement") or {},
            "replicas": spec.get("Mode", {}).get("Replicated", {}).get("Replicas")}  # fmt: skip


def spread(docker: Docker, service: str, before: Mapping[str, Any], timeout: float, say: Callable[[str], None]) -> None:
    """One replica of ``service`` (whose placement and replicas are ``before``) on each node
    that is ready and active, the relay's node included."""
    nodes = [line for line in docker("node", "ls", "--format", "{{.Status}} {{.Availability}}").splitlines()
             if line.split() == ["Ready", "Active"]]  # fmt: skip
    drop = [arg for c in before["placement"].get("Constraints") or [] for arg in ("--constraint-rm", c)]
    docker("service", "update", "-d", *drop, "--replicas", str(len(nodes)), "--replicas-max-per-node", "1", service)
    _wait_update(docker, service, "completed", ("paused", "rollback_started", "rollback_paused"), timeout)
    say(f"bench-swarm-latency: {service} at one replica on each of {len(nodes)} nodes")


def restore(docker: Docker, service: str, before: Mapping[str, Any], timeout: float,
            say: Callable[[str], None]) -> None:  # fmt: skip
    """``docker service rollback``: the spec before ``spread``, which is checked."""
    docker("service", "rollback", "-d", service)
    _wait_update(docker, service, "rollback_completed", ("rollback_paused",), timeout)
    now = _placement(docker, service)
    if now != before:
        raise DeployError(f"{service} after its rollback: {now}, not {before} as before; set it back by hand")
    say(f"bench-swarm-latency: {service} back to {before['replicas']} replica(s), constraints "
        f"{before['placement'].get('Constraints') or []}")  # fmt: skip


def probe(container: str, found: Sequence[Target], count: int, warmup: int, frame_bytes: int,
          timeout: float) -> tuple[list[dict[str, list[float]]], int]:  # fmt: skip
    """Run the probe in ``container`` (its source on stdin: the image has the code it was built
    from, not necessarily this checkout's): each target's samples (ms per kind), and the frame's size."""
    config = {"targets": [[t.address, t.port] for t in found], "count": count, "warmup": warmup,
              "frame_bytes": frame_bytes, "ready_timeout": timeout}  # fmt: skip
    argv = ["docker", "exec", "-i", container, "python3", "-", json.dumps(config)]
    proc = subprocess.run(argv, input=PROBE.read_text(), capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise DeployError(f"the probe in {container} failed: {proc.stderr.strip()[-2000:]}")
    result = json.loads(proc.stdout)
    return result["samples"], result["frame_size"]


@dataclass(frozen=True)
class Latency:
    targets: list[Target]
    rows: list[Row]
    agents: list[Row]
    frame_size: int
    relay_node: str

    def as_json(self) -> dict[str, Any]:
        return {"relay_node": self.relay_node, "frame_size": self.frame_size,
                "targets": [asdict(t) for t in self.targets], "rows": [asdict(r) for r in self.rows],
                "agents": [asdict(r) for r in self.agents], "ratios": ratios(self.rows)}  # fmt: skip


def measure(docker: Docker, stack: str, service: str, count: int, warmup: int, frame_bytes: int, timeout: float,
            out: Path, say: Callable[[str], None] = print) -> Latency:  # fmt: skip
    """Spread ``service``, probe every agent task from the relay's container, restore the
    service; write ``swarm-latency.json`` and ``swarm-latency.md`` into ``out``."""
    container, relay_node = relay_container(docker, stack)
    ports = agent_ports(docker, stack)
    if service not in ports:
        raise DeployError(f"{service} is not an agent service of the stack {stack!r}: {', '.join(ports)}")
    before = _placement(docker, f"{stack}_{service}")
    try:  # restored whatever happens once its update is asked for, a spread that times out included
        spread(docker, f"{stack}_{service}", before, timeout, say)
        found = targets(docker, stack, ports, relay_node)
        say(f"bench-swarm-latency: {len(found)} agent tasks, {sum(t.same_node for t in found)} on {relay_node} "
            f"with the relay; {count} round trips of each kind to each")  # fmt: skip
        samples, size = probe(container, found, count, warmup, frame_bytes, timeout)
    finally:
        restore(docker, f"{stack}_{service}", before, timeout, say)
    result = Latency(found, summarise(found, samples), per_agent(found, samples), size, relay_node)
    out.mkdir(parents=True, exist_ok=True)
    (out / "swarm-latency.json").write_text(json.dumps(result.as_json(), indent=2) + "\n")
    (out / "swarm-latency.md").write_text(markdown(result.rows, size) + "\n" + markdown(result.agents, size))
    return result
