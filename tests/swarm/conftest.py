"""A real swarm of three Docker engines in containers (gaiamesh swarm-cluster), the stack that
`gaiamesh swarm-up` deploys on it, and the means to run tasks through its API.

One cluster serves the whole package (bringing one up and loading the images into it is most of
the suite's time): its engines start with no swarm, so `gaiamesh swarm-up` first makes a
one-node swarm on node 1 (``first_deploy``, what `test_swarm_up.py` checks); then the two other
engines join as workers and swarm-up deploys again across the three (``swarm``)."""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest

from gaiamesh.deploy import cluster
from gaiamesh.deploy.swarm import AGENTS_LABEL
from gaiamesh.errors import RunRefused
from gaiamesh.evaluation.metrics import outages_ms
from gaiamesh.mesh.records import MemberEvent
from gaiamesh.service.client import answers, submit
from gaiamesh.service.models import RunRequest

from .. import shared
from ..conftest import ROOT, require_docker

IMAGES = ["gaiamesh-agent:0.1.0", "gaiamesh-network:0.1.0", "gaiamesh-ollama:0.1.0", "gaiamesh-registry:0.1.0"]
KEY = "swarm-suite-access-key-0123456789"
SECRET = "swarm-suite-session-secret-0123456789-abcdef"
MESH_TOKEN = "swarm-suite-mesh-token-0123456789"
ROTATED = "swarm-suite-rotated-access-key-9876543210"  # the access key of the second deploy
TEAM_WAIT_S = 120.0  # how long a run may be refused while a deploy replaces the agents
SUBNET = "198.18.251.0/24"
DOCKER_ENV = ("PATH", "HOME", "TMPDIR", "DOCKER_CONFIG", "LANG", "LC_ALL", "GAIAMESH_USER")  # not make swarm-cluster's default, so a developer's cluster can stay up


@pytest.fixture(scope="session", autouse=True)
def docker_engine() -> None:
    """Every test here needs a Docker engine: without one each fails, saying so (docs/development.md)."""
    require_docker("tests/swarm")


def as_it_was(before: str, spec: cluster.ClusterSpec) -> bool:
    """The host's swarm state as before, and no container, network or volume of the suite's
    cluster left (other suites may start and stop containers of their own meanwhile: the
    compose suite runs beside this one under `make test`)."""
    return host_swarm() == before and not cluster_leftovers(spec)


def host_swarm() -> str:
    """The host engine's swarm state: the suite must leave it as it found it."""
    return subprocess.run(["docker", "info", "--format", "{{.Swarm.LocalNodeState}}"], capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip


def cluster_leftovers(spec: cluster.ClusterSpec) -> list[str]:
    """Every container, network and volume on the host labelled as the cluster's."""
    label = f"label={cluster.LABEL}={spec.name}"
    found = []
    for kind in ("container", "network", "volume"):
        argv = ["docker", kind, "ls", "-q", "--filter", label] + (["-a"] if kind == "container" else [])
        found += subprocess.run(argv, capture_output=True, text=True, check=True).stdout.split()
    return found


@dataclass
class Swarm:
    """A deployed stack on the test cluster."""

    spec: cluster.ClusterSpec
    env: dict[str, str]  # DOCKER_HOST and what swarm-up rendered the stack with
    results: Path
    key: str = KEY  # the API's access key of the stack deployed last

    @property
    def api(self) -> str:
        return f"http://{self.spec.address(1)}:8080"

    def docker(self, *args: str, node: int = 1, check: bool = True) -> str:
        proc = subprocess.run(cluster.on(self.spec, node, *args), capture_output=True, text=True, check=False)
        assert proc.returncode == 0 or not check, proc.stderr
        return proc.stdout

    def swarm_up(self, *args: str) -> subprocess.CompletedProcess[str]:
        ip = self.spec.address(1)
        argv = [str(ROOT / ".venv" / "bin" / "gaiamesh"), "swarm-up", "--advertise-addr", ip, "--registry",
                f"{ip}:5000", "--registry-bind", "0.0.0.0", "--registry-start", "yes", "--api-host", ip,
                "--timeout", "300", *args]  # fmt: skip
        return subprocess.run(argv, cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=900)

    def swarm_down(self, *args: str) -> subprocess.CompletedProcess[str]:
        argv = [str(ROOT / ".venv" / "bin" / "gaiamesh"), "swarm-down", *args]
        return subprocess.run(argv, cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=300)

    def run(self, task: str, progress: Any = None) -> tuple[dict[str, Any], Path]:
        """One run of a bundled task through the API: its metrics.json and its folder on disk.
        Right after a deploy, swarm may still be replacing an agent's task (a service whose
        settings changed is updated after `docker stack deploy` returns): the service then
        refuses the run (409, its team is not all there) until the new task answers."""
        deadline = time.monotonic() + TEAM_WAIT_S
        while True:
            try:
                view, _ = submit(self.api, self.key, RunRequest(task=task), progress=progress or (lambda _line: None))
                break
            except RunRefused as exc:
                if exc.status != HTTPStatus.CONFLICT or time.monotonic() > deadline:
                    raise
                time.sleep(1.0)  # polling the service's team check: swarm gives no event for a task's start
        folder = self.results / "runs" / view.id
        return json.loads((folder / "metrics.json").read_text()), folder

    def stop_node(self, node: int) -> None:
        """A worker's engine stops, and every container on it with it (a host lost)."""
        subprocess.run(["docker", "stop", "-t", "0", self.spec.node(node)], check=True, capture_output=True)

    def services_whole(self, lost: int) -> bool:
        """Every task of the stack that should run is running, and none on node ``lost``
        (``docker service ls`` still counts a down node's tasks for a while)."""
        names = self.docker("service", "ls", "--filter", "label=com.docker.stack.namespace=gaiamesh",
                            "--format", "{{.Name}}").split()  # fmt: skip
        out = self.docker("service", "ps", "--filter", "desired-state=running", "--format",
                          "{{.Node}} {{.CurrentState}}", *names)  # fmt: skip
        tasks = [line.split()[:2] for line in out.splitlines() if line.strip()]
        return bool(tasks) and all(node != self.spec.node(lost) and state == "Running" for node, state in tasks)

    def recovery(self, outcomes: list[tuple[dict[str, Any], Path]], lost_at: float) -> str:
        """How long the relay's tools were not routable in each run (membership), as a line."""
        spans = [outages_ms([MemberEvent(**e) for e in m.get("membership") or []]) for m, _ in outcomes]
        return f"relay: tools back after {spans} ms"

    def swarm_state(self, node: int = 1) -> str:
        return self.docker("info", "--format", "{{.Swarm.LocalNodeState}}", node=node).strip()

    def running(self, service: str) -> int:
        line = self.docker("service", "ls", "--filter", f"name=gaiamesh_{service}", "--format", "{{.Replicas}}")
        return int(line.split("/")[0]) if line.strip() else 0


def bring_up(spec: cluster.ClusterSpec, recorded: Callable[[], Path], swarm: bool = True) -> Swarm:
    """The engines of ``spec`` (and their swarm, unless ``swarm`` is False), our images on the
    manager, the recorded runs on every node (asked for once the engines are up: the recording
    may still be under way in another worker), and the environment swarm-up is run with."""
    results = ROOT / "build" / "swarm-test" / spec.name
    results.mkdir(parents=True)
    subprocess.run([str(ROOT / "scripts" / "owner.sh"), str(results)], check=True)  # the service's uid writes there
    cluster.up(spec, swarm=swarm)
    cluster.load_images(spec, 1, IMAGES)
    return _with_recording(spec, recorded(), results)


def _with_recording(spec: cluster.ClusterSpec, recorded: Path, results: Path) -> Swarm:
    for node in range(1, spec.nodes + 1):  # a replay's folder must be on every agent node, at the same path
        subprocess.run(["docker", "exec", spec.node(node), "mkdir", "-p", str(recorded.parent)], check=True)
        subprocess.run(["docker", "cp", str(recorded), f"{spec.node(node)}:{recorded}"], check=True)
    # Only what docker needs from this process: the compose suite's fixture sets RESULTS_DIR,
    # SERVICE_PORT and more for the whole session, and compose would read them.
    base = {k: v for k, v in os.environ.items() if k in DOCKER_ENV}
    env = {**base, "GAIAMESH_ENV_FILE": "", "DOCKER_HOST": spec.docker_host(1), "RESULTS_DIR": str(results),
           "LLM_BACKEND": "replay", "REPLAY_FROM": str(recorded), "REPLAY_PACE": "recorded",
           "REJOIN_GRACE": "150", "RUN_TIMEOUT": "300",
           # the suite's own secrets (compose prefers the environment to .env): swarm secrets
           "GAIAMESH_ACCESS_KEY": KEY, "GAIAMESH_SESSION_SECRET": SECRET, "GAIAMESH_MESH_TOKEN": MESH_TOKEN,
           "SERVICE_PORT": "8080"}  # fmt: skip
    return Swarm(spec, env, results)


def take_down(deployed: Swarm) -> None:
    """Remove the cluster and the results folder (swarm-down is the test's or fixture's own)."""
    cluster.down(deployed.spec)
    subprocess.run(["rm", "-rf", str(deployed.results)], check=False)


def images() -> None:
    shared.make(ROOT, "images", "registry-image", "swarm-node-image", "keys")


@dataclass
class FirstDeploy:
    """What `gaiamesh swarm-up` found and did on node 1's engine, with no swarm anywhere."""

    state_before: str  # node 1's swarm state before
    up: subprocess.CompletedProcess[str]
    state_after: str
    labels: dict[str, str]  # node 1's, as swarm-up set them
    runs: list[dict[str, Any]]  # the metrics of the runs it made (the bundled task's)


@pytest.fixture(scope="package")
def engines(request: pytest.FixtureRequest) -> Iterator[Swarm]:
    """Three engines and no swarm (what swarm-up finds on new machines), our images on node 1,
    the ``recorded`` live runs on each. Removed, and the host checked as it was, at the end."""
    before = host_swarm()
    images()
    spec = cluster.ClusterSpec(name=f"gmtest-{uuid.uuid4().hex[:6]}", nodes=3, subnet=SUBNET, checkout=str(ROOT))
    deployed = Swarm(spec, {}, ROOT / "build" / "swarm-test" / spec.name)
    try:
        deployed = bring_up(spec, lambda: request.getfixturevalue("recorded"), swarm=False)
        yield deployed
    finally:
        take_down(deployed)
    assert as_it_was(before, spec), (before, host_swarm(), cluster_leftovers(spec))


@pytest.fixture(scope="package")
def first_deploy(engines: Swarm) -> FirstDeploy:
    """`gaiamesh swarm-up` as `make swarm-up` runs it (no --no-run: it runs the bundled task
    through the API) on node 1, which is in no swarm."""
    state_before = engines.swarm_state()
    up = engines.swarm_up()
    assert up.returncode == 0, up.stdout + up.stderr
    labels = json.loads(engines.docker("node", "inspect", "--format", "{{json .Spec.Labels}}", engines.spec.node(1)))
    runs = [json.loads(p.read_text()) for p in engines.results.glob("runs/*/metrics.json")]
    return FirstDeploy(state_before, up, engines.swarm_state(), labels, runs)


@pytest.fixture(scope="package")
def swarm(engines: Swarm, first_deploy: FirstDeploy) -> Iterator[Swarm]:
    """The three engines as one swarm: nodes 2 and 3 join node 1's as workers, node 1 is kept
    free of agents (``gaiamesh.agents=false``, a user's label swarm-up keeps), and swarm-up
    deploys again with a new access key, with the stream profile's team (a coordinator, two
    answerer replicas). Node 1 then has the network service, the API and the
    registry; the workers (labelled by swarm-up) the agents and the model server. The agents
    replay the ``recorded`` live runs at their recorded pace, so a run's bytes can be held
    against those runs' and a run lasts long enough to lose a node in it. At the end swarm-down
    leaves the swarm, which swarm-up made, and every container it started."""
    cluster.join_workers(engines.spec)
    engines.docker("node", "update", "--label-add", f"{AGENTS_LABEL}=false", engines.spec.node(1))
    engines.env["GAIAMESH_ACCESS_KEY"] = engines.key = ROTATED
    up = engines.swarm_up("--no-run", "--profile", "stream", "--replicas", "answerer=2")  # and a stream's team
    assert up.returncode == 0, up.stdout + up.stderr
    assert answers(engines.api, 120), f"the API does not answer at {engines.api}"
    yield engines
    down = engines.swarm_down("--volumes")
    assert down.returncode == 0, down.stdout + down.stderr
    assert engines.swarm_state() == "inactive"  # swarm-up made it, so swarm-down left it
    deadline = time.monotonic() + 60
    while engines.docker("ps", "-aq").split():  # the stack's tasks and the registry container
        assert time.monotonic() < deadline, engines.docker("ps", "-a")
        time.sleep(1)  # polling: the engine removes a left swarm's containers in its own time
