"""``gaiamesh swarm-up`` / ``swarm-down``: the decisions, as plain functions of what ``docker``
reported (tested by plain calls), and the state file that lets swarm-down undo only what
swarm-up did. The docker commands themselves run in :mod:`gaiamesh.deploy.swarmrun` (swarm-up)
and :mod:`gaiamesh.deploy.swarmdown`.

Everything acts on the engine the ``docker`` CLI talks to (``DOCKER_HOST`` is honoured), never
on "the host": an engine is known by its daemon id, and a swarm by its cluster id.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, DeployError
from .swarm import AGENTS_LABEL, API_SERVICE, NETWORK_LABEL

STACK_NAMESPACE = "com.docker.stack.namespace"  # the label docker stack puts on what it creates
REGISTRY_CONTAINER = "gaiamesh-registry"
REGISTRY_VOLUME = "gaiamesh-registry-data"
REGISTRY_DATA = "/var/lib/docker-registry"  # services/registry: the volume the layers live in
MADE_BY = "gaiamesh.swarm-up"  # a label on what swarm-up creates, for people reading `docker ps`
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
REPLICAS = re.compile(r"(\d+)/(\d+)")


# --- what docker reports ---------------------------------------------------------------------
@dataclass(frozen=True)
class Engine:
    """``docker info``: the engine and its place in a swarm."""

    id: str  # the daemon's id: the same engine whatever DOCKER_HOST names it
    swarm_state: str  # inactive | pending | active | error | locked
    manager: bool  # ControlAvailable
    node_id: str = ""
    node_addr: str = ""
    cluster: str = ""  # the swarm's id ("" when not a manager of one)

    @classmethod
    def from_info(cls, info: Mapping[str, Any]) -> Engine:
        swarm = info.get("Swarm") or {}
        return cls(
            id=str(info.get("ID") or ""),
            swarm_state=str(swarm.get("LocalNodeState") or "inactive"),
            manager=bool(swarm.get("ControlAvailable")),
            node_id=str(swarm.get("NodeID") or ""),
            node_addr=str(swarm.get("NodeAddr") or ""),
            cluster=str((swarm.get("Cluster") or {}).get("ID") or ""),
        )


@dataclass(frozen=True)
class Node:
    """One node of ``docker node inspect``: its id, name and labels."""

    id: str
    hostname: str
    labels: Mapping[str, str]

    @classmethod
    def from_inspect(cls, node: Mapping[str, Any]) -> Node:
        spec = node.get("Spec") or {}
        return cls(str(node["ID"]), str((node.get("Description") or {}).get("Hostname") or ""),
                   dict(spec.get("Labels") or {}))  # fmt: skip


# --- step 1: the swarm -------------------------------------------------------------------------
def swarm_action(engine: Engine) -> str:
    """``init`` (no swarm here) or ``use`` (this engine manages one); anything else is refused,
    since joining, unlocking or repairing a swarm is the user's call, not ours."""
    if engine.swarm_state == "inactive":
        return "init"
    if engine.swarm_state == "active" and engine.manager:
        return "use"
    if engine.swarm_state == "active":
        raise ConfigError(
            "this engine is a swarm worker: stacks are deployed from a manager (point DOCKER_HOST at one)"
        )
    raise DeployError(
        f"this engine's swarm is {engine.swarm_state}: see `docker info` "
        "(a locked swarm needs `docker swarm unlock`; a pending or failed join, `docker swarm leave`)"
    )


def init_argv(advertise_addr: str | None) -> list[str]:
    """``docker swarm init``; the advertise address is needed where the engine has several."""
    return ["swarm", "init", *(["--advertise-addr", advertise_addr] if advertise_addr else [])]


# --- step 2: node labels -----------------------------------------------------------------------
def label_plan(nodes: Sequence[Node], manager_id: str) -> list[tuple[str, str]]:
    """``(node id, label)`` pairs to set to ``true``.

    - No node holds the network role: the manager swarm-up talks to gets it (it is the machine
      with the checkout, which the network service's binds need).
    - Every node without an agents label gets one, the network node too, so that a one-node
      swarm runs everything and agents spread over every node. A label already there, with any
      value, is the user's choice and stays: ``gaiamesh.agents=false`` keeps agents off a node.
    """
    plan: list[tuple[str, str]] = []
    if not any(_is_true(n.labels.get(NETWORK_LABEL)) for n in nodes):
        if manager_id not in {n.id for n in nodes}:
            raise DeployError(f"the manager {manager_id} is not among the swarm's nodes")
        plan.append((manager_id, NETWORK_LABEL))
    plan += [(n.id, AGENTS_LABEL) for n in nodes if AGENTS_LABEL not in n.labels]
    return plan


def _is_true(value: str | None) -> bool:
    return (value or "").lower() == "true"


# --- step 3: images ----------------------------------------------------------------------------
def project_images(config: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """The images of ``docker compose config``'s services: (the ones compose builds, the others).
    An image compose builds comes from ``make images``; another (a user's own, an official
    Ollama) must already be on the engine."""
    built: set[str] = set()
    other: set[str] = set()
    project = str(config.get("name") or "gaiamesh")
    for name, svc in (config.get("services") or {}).items():
        image = svc.get("image") or f"{project}-{name}"
        (built if svc.get("build") else other).add(image)
    return sorted(built), sorted(other - built)


def make_targets(missing: Iterable[str], built: Iterable[str], registry_image: str | None) -> list[str]:
    """The make targets that build what is missing (``make images`` builds every project image
    at once); an image neither target builds is refused by the caller."""
    missing = set(missing)
    targets = ["images"] if missing & set(built) else []
    return targets + (["registry-image"] if registry_image in missing else [])


# --- step 4: the registry ----------------------------------------------------------------------
def registry_host_port(registry: str) -> tuple[str, int]:
    host, _, port = registry.rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(f"REGISTRY {registry!r}: expected HOST:PORT")
    return host.strip("[]"), int(port)


def runs_own_registry(registry: str, start: str, engine: Engine) -> bool:
    """Whether swarm-up runs the project's registry on this engine: ``start`` is yes, no, or
    auto, which runs it when REGISTRY names this engine (a loopback address, localhost, or the
    node's own swarm address) and leaves a registry elsewhere (the user's) alone."""
    if start in ("yes", "no"):
        return start == "yes"
    if start != "auto":
        raise ConfigError(f"REGISTRY_START={start!r}: expected auto, yes or no")
    host, _ = registry_host_port(registry)
    if host in ("localhost", engine.node_addr):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def registry_run_argv(image: str, bind: str, port: int) -> list[str]:
    """``docker run`` of the registry: on this engine, published on ``bind`` only, its layers in
    a named volume (they outlive the container: a second swarm-up pushes nothing new), restarted
    with the engine (nodes pull from it whenever swarm reschedules a task)."""
    publish = f"[{bind}]:{port}:5000" if ":" in bind else f"{bind}:{port}:5000"
    return ["run", "-d", "--name", REGISTRY_CONTAINER, "--label", f"{MADE_BY}=true", "--restart", "unless-stopped",
            "-p", publish, "-v", f"{REGISTRY_VOLUME}:{REGISTRY_DATA}", image]  # fmt: skip


def container_action(state: Mapping[str, Any] | None) -> str:
    """``docker inspect``'s State of the registry container -> ``run`` (none), ``start``
    (stopped), ``wait`` (running, not yet healthy) or ``ready``."""
    if state is None:
        return "run"
    if not state.get("Running"):
        return "start"
    health = (state.get("Health") or {}).get("Status")
    return "ready" if health in (None, "healthy") else "wait"


# --- step 5: push and digests ------------------------------------------------------------------
def pushed_digest(push_output: str) -> str | None:
    """The digest ``docker push`` reports: ``TAG: digest: sha256:... size: N``."""
    match = re.search(r"digest: (sha256:[0-9a-f]{64})", push_output)
    return match.group(1) if match else None


def repo_digest(repo_digests: Sequence[str], repository: str) -> str | None:
    """The digest of ``repository`` (``127.0.0.1:5000/gaiamesh-agent``) among ``docker image
    inspect``'s RepoDigests (``repo@sha256:...``): an image pushed to several registries has one
    per registry, and only this one's is the digest the nodes pull."""
    for entry in repo_digests:
        repo, _, digest = entry.rpartition("@")
        if repo == repository and DIGEST.fullmatch(digest):
            return digest
    return None


def repository(registry: str, image: str) -> str:
    """``127.0.0.1:5000/gaiamesh-agent`` for ``gaiamesh-agent:0.1.0``: the name without its tag."""
    name = f"{registry}/{image}"
    last = name.rsplit("/", 1)[-1]
    return name[: -len(last)] + last.split(":", 1)[0] if ":" in last else name


def digests_json(digests: Mapping[str, str]) -> str:
    """The digests file ``gaiamesh swarm-stack --digests`` reads (:func:`swarm.parse_digests`):
    local image name -> digest."""
    for image, digest in digests.items():
        if not DIGEST.fullmatch(digest):
            raise DeployError(f"digest of {image} is {digest!r}, not sha256:<64 hex digits>")
    return json.dumps(dict(sorted(digests.items())), indent=2) + "\n"


# --- step 7: the stack's services --------------------------------------------------------------
def parse_service_ls(text: str) -> dict[str, tuple[int, int]]:
    """``docker service ls --format '{{.Name}} {{.Replicas}}'`` -> name -> (running, desired).
    Replicas reads ``1/2`` (``1/2 (max 1 per node)`` with a limit)."""
    out: dict[str, tuple[int, int]] = {}
    for line in text.splitlines():
        name, _, replicas = line.strip().partition(" ")
        match = REPLICAS.match(replicas.strip())
        if name and match:
            out[name] = (int(match.group(1)), int(match.group(2)))
    return out


UPDATING = {"updating", "paused", "rollback_started", "rollback_paused"}


def still_updating(services: Mapping[str, tuple[int, int]], states: str) -> dict[str, tuple[int, int]]:
    """``services`` with each one that is being updated counted as 0 running: while an update
    replaces its tasks, ``docker service ls`` still counts the old ones, which are going.
    ``states``: ``docker service inspect --format '{{.Spec.Name}} {{.UpdateStatus.State}}'``."""
    busy = {line.split()[0] for line in states.splitlines() if len(line.split()) == 2 and line.split()[1] in UPDATING}
    return {name: ((0, want) if name in busy else (run, want)) for name, (run, want) in services.items()}


def not_ready(services: Mapping[str, tuple[int, int]]) -> list[str]:
    """The services with fewer running tasks than they want (a service wanting 0 is ready)."""
    return sorted(name for name, (running, desired) in services.items() if running < desired)


def progress_line(services: Mapping[str, tuple[int, int]], stack: str) -> str:
    waiting = not_ready(services)
    ready = len(services) - len(waiting)
    short = ", ".join(f"{_short(n, stack)} {services[n][0]}/{services[n][1]}" for n in waiting)
    return f"{ready}/{len(services)} services running" + (f"; waiting for {short}" if short else "")


def _short(service: str, stack: str) -> str:
    return service.removeprefix(f"{stack}_")


# --- the state file: what swarm-up made, so that swarm-down removes that and nothing else -------
@dataclass
class Made:
    """What swarm-up created on one engine (the state file holds one per engine id)."""

    docker_host: str = ""  # as the user named the engine (for people reading the file)
    cluster: str = ""  # the swarm swarm-up initialised ("" if it found one)
    registry_container: str = ""
    registry_volume: str = ""
    labels: list[list[str]] = field(default_factory=list)  # [node id, label] pairs it set

    def made_swarm(self, engine: Engine) -> bool:
        """Whether this engine's current swarm is the one swarm-up initialised (a swarm left and
        made again by hand since then is not)."""
        return bool(self.cluster) and self.cluster == engine.cluster


def load_state(path: Path) -> dict[str, Made]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {engine: Made(**made) for engine, made in data.get("engines", {}).items()}
    except (ValueError, TypeError, AttributeError) as exc:
        raise ConfigError(f"{path}: not a swarm-up state file ({exc}); remove it to start afresh") from exc


def save_state(path: Path, state: Mapping[str, Made]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    engines = {engine: asdict(made) for engine, made in sorted(state.items()) if made != Made(made.docker_host)}
    path.write_text(json.dumps({"engines": engines}, indent=2) + "\n", encoding="utf-8")


def labels_to_remove(made: Made, engine: Engine, nodes: Iterable[str]) -> list[tuple[str, str]]:
    """The labels swarm-down takes off: those swarm-up set, on nodes still in the swarm, unless
    the whole swarm goes (leaving it forgets them anyway)."""
    if made.made_swarm(engine):
        return []
    present = set(nodes)
    return [(node, label) for node, label in made.labels if node in present]


# --- step 8: the run through the API -----------------------------------------------------------
def api_port(stack: Mapping[str, Any]) -> int:
    """The port the stack publishes the API on (host mode, on the network node)."""
    ports = (stack.get("services") or {}).get(API_SERVICE, {}).get("ports") or []
    if not ports:
        raise ConfigError(f"the stack publishes no port of its {API_SERVICE!r} service: nothing reaches the API")
    return int(ports[0]["published"])


def results_folder(stack: Mapping[str, Any]) -> Path | None:
    """The folder the network service writes runs into (its /results bind), where the run's
    metrics.json and archive are saved as ``make up`` saves them; None when it is no bind."""
    for volume in (stack.get("services") or {}).get(API_SERVICE, {}).get("volumes") or []:
        if volume.get("type") == "bind" and volume.get("target") == "/results":
            return Path(volume["source"])
    return None
