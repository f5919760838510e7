"""A swarm of several Docker engines on one machine, for tests and measurements (issue 36).

Each node is a container of ``gaiamesh-swarm-node`` (``services/swarm-node``: Debian's docker.io
on our base image) on a Docker network of the cluster's own. ``--privileged`` is refused on
this machine (the host lacks CAP_SYS_RESOURCE), so a node gets every capability but that one,
no seccomp or AppArmor profile, ``/dev/fuse`` (its engine stores images with fuse-overlayfs)
and the host's cgroup tree read-write (read-only, its containers cannot make their cgroups).

Node 1 is the manager and runs the network service (``gaiamesh.network=true``); the others are
workers that run agents (``gaiamesh.agents=true``). Every engine listens on TCP 2375
of the cluster's network only, so the host drives any node with ``DOCKER_HOST=tcp://ADDR:2375``.

The argv builders are pure; :func:`up`, :func:`down` and :func:`load_images` run them.
"""

from __future__ import annotations

import ipaddress
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..errors import ConfigError, RunError
from .swarm import AGENTS_LABEL, NETWORK_LABEL

NODE_IMAGE = "gaiamesh-swarm-node:0.1.0"
LABEL = "gaiamesh.swarm-cluster"  # on every container, volume and network a cluster makes
ENGINE_WAIT_S = 60.0  # a node's engine answers in 2-5 s here; the first start makes its folders
POLL_S = 0.5  # between looks at an engine that is starting: dockerd gives no readiness signal


@dataclass(frozen=True)
class ClusterSpec:
    """What cluster to make: its name (the prefix of everything it makes), nodes and subnet."""

    name: str = "gaiamesh-swarm"
    nodes: int = 3
    subnet: str = "198.18.250.0/24"  # RFC 2544 benchmark space: outside the pools Docker takes its own networks from
    image: str = NODE_IMAGE
    # Bound into the manager at the same path: the network service binds tasks/ and results/
    # of the checkout, and swarm binds paths of the node that runs it.
    checkout: str | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.nodes <= 9:
            raise ConfigError(f"a test cluster has 1 to 9 nodes, not {self.nodes}")
        net = ipaddress.IPv4Network(self.subnet)
        if net.num_addresses < 16:
            raise ConfigError(f"the cluster's subnet {self.subnet} is too small")

    def node(self, i: int) -> str:
        """Node ``i``'s container name and host name (1-based)."""
        return f"{self.name}-{i}"

    def address(self, i: int) -> str:
        """Node ``i``'s fixed address: the subnet's ``10 + i``th (the gateway is its first)."""
        return str(ipaddress.IPv4Network(self.subnet)[10 + i])

    def docker_host(self, i: int) -> str:
        return f"tcp://{self.address(i)}:2375"

    def labels(self, i: int) -> list[str]:
        """Node ``i``'s placement labels: the manager runs the network service (and the API and
        registry), the workers run agents, so every frame crosses nodes; a one-node cluster's
        manager runs both."""
        network = i == 1
        agents = i > 1 or self.nodes == 1
        return [f"{NETWORK_LABEL}={str(network).lower()}", f"{AGENTS_LABEL}={str(agents).lower()}"]


def network_argv(spec: ClusterSpec) -> list[str]:
    return ["docker", "network", "create", "--subnet", spec.subnet, "--label", f"{LABEL}={spec.name}", spec.name]


def node_argv(spec: ClusterSpec, i: int) -> list[str]:
    """``docker run`` for node ``i`` (the flags issue 36 found to work without --privileged)."""
    name = spec.node(i)
    return [
        "docker", "run", "-d", "--name", name, "--hostname", name,
        "--network", spec.name, "--ip", spec.address(i), "--label", f"{LABEL}={spec.name}",
        "--cap-add", "ALL", "--cap-drop", "SYS_RESOURCE",
        "--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
        "--security-opt", "systempaths=unconfined",
        "--device", "/dev/fuse", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw", "--tmpfs", "/run",
        "--mount", f"type=volume,src={name}-docker,dst=/var/lib/docker,volume-label={LABEL}={spec.name}",
        "-e", f"INSECURE_REGISTRIES={spec.subnet}",
        *(["-v", f"{spec.checkout}:{spec.checkout}"] if spec.checkout and i == 1 else []),
        spec.image,
    ]  # fmt: skip


def run(argv: Sequence[str]) -> str:
    """Run a docker command; its stdout, or :class:`RunError` with its stderr."""
    proc = subprocess.run(list(argv), capture_output=True, check=False)
    if proc.returncode != 0:
        raise RunError(f"{' '.join(argv[:4])} ... failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout.decode(errors="replace")


def on(spec: ClusterSpec, i: int, *args: str) -> list[str]:
    """A docker CLI command run against node ``i``'s engine."""
    return ["docker", "-H", spec.docker_host(i), *args]


def _wait_engine(spec: ClusterSpec, i: int, say: Callable[[str], None]) -> None:
    deadline = time.monotonic() + ENGINE_WAIT_S
    while True:
        proc = subprocess.run(on(spec, i, "info", "--format", "{{.ServerVersion}}"), capture_output=True, check=False)
        if proc.returncode == 0:
            say(f"node {spec.node(i)}: engine {proc.stdout.decode().strip()} at {spec.docker_host(i)}")
            return
        if time.monotonic() >= deadline:
            logs = subprocess.run(["docker", "logs", "--tail", "20", spec.node(i)], capture_output=True, text=True)
            raise RunError(f"node {spec.node(i)}: its engine did not answer in {ENGINE_WAIT_S:.0f} s:\n{logs.stderr}")
        time.sleep(POLL_S)  # polling: dockerd gives no signal when it is ready


def up(spec: ClusterSpec, say: Callable[[str], None] = print, swarm: bool = True) -> None:
    """Make the cluster: network, nodes, a swarm with node 1 as manager, role labels (with
    ``swarm=False``, the engines alone: what `gaiamesh swarm-up` finds on a new machine)."""
    if exists(spec):
        raise ConfigError(f"a cluster named {spec.name} exists already; `gaiamesh swarm-cluster down` first")
    run(network_argv(spec))
    for i in range(1, spec.nodes + 1):
        run(node_argv(spec, i))
    for i in range(1, spec.nodes + 1):
        _wait_engine(spec, i, say)
    if not swarm:
        say(f"engines: {spec.nodes}, no swarm; DOCKER_HOST={spec.docker_host(1)}")
        return
    run(on(spec, 1, "swarm", "init", "--advertise-addr", spec.address(1)))
    join_workers(spec)
    for i in range(1, spec.nodes + 1):
        adds = [arg for label in spec.labels(i) for arg in ("--label-add", label)]
        run(on(spec, 1, "node", "update", *adds, spec.node(i)))
    say(f"swarm: {spec.nodes} nodes, manager {spec.node(1)}; DOCKER_HOST={spec.docker_host(1)}")


def join_workers(spec: ClusterSpec) -> None:
    """Nodes 2 and on join node 1's swarm as workers (unlabelled)."""
    token = run(on(spec, 1, "swarm", "join-token", "-q", "worker")).strip()
    for i in range(2, spec.nodes + 1):
        run(on(spec, i, "swarm", "join", "--token", token, f"{spec.address(1)}:2377"))


def exists(spec: ClusterSpec) -> bool:
    return bool(run(["docker", "ps", "-aq", "--filter", f"label={LABEL}={spec.name}"]).strip())


def down(spec: ClusterSpec, say: Callable[[str], None] = print) -> None:
    """Remove everything the cluster made (its containers, their engines' volumes, its network);
    nothing else, and nothing of the host's own swarm state."""
    label = f"label={LABEL}={spec.name}"
    containers = run(["docker", "ps", "-aq", "--filter", label]).split()
    if containers:
        run(["docker", "rm", "-f", "-v", *containers])
    volumes = run(["docker", "volume", "ls", "-q", "--filter", label]).split()
    if volumes:
        run(["docker", "volume", "rm", "-f", *volumes])
    networks = run(["docker", "network", "ls", "-q", "--filter", label]).split()
    if networks:
        run(["docker", "network", "rm", *networks])
    say(f"swarm-cluster {spec.name}: removed {len(containers)} nodes, {len(volumes)} volumes")


def missing_images(spec: ClusterSpec, i: int, images: Sequence[str]) -> list[str]:
    """Those of ``images`` node ``i``'s engine does not have (by image id)."""
    have = set(run(on(spec, i, "images", "-q", "--no-trunc")).split())
    ids = run(["docker", "image", "inspect", "--format", "{{.Id}}", *images]).split()
    return [img for img, iid in zip(images, ids, strict=True) if iid not in have]


def load_images(spec: ClusterSpec, i: int, images: Sequence[str], say: Callable[[str], None] = print) -> None:
    """Copy the host engine's ``images`` into node ``i``'s engine (``docker save | docker load``),
    those it lacks only: the cluster's way in, since no node can pull from outside."""
    todo = missing_images(spec, i, images)
    if not todo:
        return
    t0 = time.monotonic()
    with subprocess.Popen(["docker", "save", *todo], stdout=subprocess.PIPE, stderr=subprocess.PIPE) as save:
        load = subprocess.run(on(spec, i, "load", "-q"), stdin=save.stdout, capture_output=True, check=False)
        save_err = save.stderr.read() if save.stderr else b""
    if save.returncode != 0 or load.returncode != 0:
        why = (save_err or load.stderr).decode(errors="replace").strip()
        raise RunError(f"copying {', '.join(todo)} to {spec.node(i)} failed: {why}")
    say(f"node {spec.node(i)}: loaded {', '.join(todo)} ({time.monotonic() - t0:.0f} s)")
