"""The docker commands of ``gaiamesh swarm-up`` (docs/swarm.md), in order, each step idempotent
and reported in one line; what to do is decided in :mod:`.swarmup`, swarm-down's commands are in
:mod:`.swarmdown`, the files a deploy reads from this machine in :mod:`.stackfiles`.

Every command goes through :class:`Docker`, the ``docker`` CLI as the user's environment sets it
up (DOCKER_HOST, DOCKER_CONTEXT), so the same code drives this machine's engine or a test
cluster's manager, and tests can hand in a fake.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import DeployError
from .stackfiles import ensure_keys, fingerprints, write_secrets
from .swarm import API_SERVICE, DEFAULT_REGISTRY, StackOptions, stack_from_compose
from .swarmup import (
    REGISTRY_CONTAINER,
    REGISTRY_VOLUME,
    STACK_NAMESPACE,
    Engine,
    Made,
    Node,
    container_action,
    digests_json,
    init_argv,
    label_plan,
    load_state,
    make_targets,
    not_ready,
    parse_service_ls,
    progress_line,
    project_images,
    pushed_digest,
    registry_host_port,
    registry_run_argv,
    repo_digest,
    repository,
    runs_own_registry,
    save_state,
    still_updating,
    swarm_action,
)

Say = Callable[[str], None]
UP_STEPS = 7  # the steps swarm-up numbers here; the CLI's run through the API is the 8th
POLL = 3.0  # seconds between looks at services that are still starting or going


class Docker:
    """The ``docker`` CLI. Output is captured (and never printed: no secret passes through a
    command line here, but a failing command's stderr goes into the error)."""

    def __call__(self, *args: str) -> str:
        proc = self._run(args)
        if proc.returncode != 0:
            raise DeployError(f"`docker {' '.join(args)}` failed: {proc.stderr.strip() or proc.stdout.strip()}")
        return proc.stdout

    def probe(self, *args: str) -> str | None:
        """The output, or None when the command fails (an absent container, image, stack)."""
        proc = self._run(args)
        return proc.stdout if proc.returncode == 0 else None

    def make(self, target: str) -> None:
        """A make target of the checkout (its output shows: a build takes minutes). make and the
        docker it runs inherit this environment, DOCKER_HOST included."""
        try:
            code = subprocess.run(["make", target], check=False).returncode
        except FileNotFoundError as exc:
            raise DeployError(f"make is not installed: cannot run `make {target}`") from exc
        if code != 0:
            raise DeployError(f"`make {target}` failed (exit {code}): its output is above")

    @staticmethod
    def _run(args: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(["docker", *args], capture_output=True, text=True, check=False)
        except FileNotFoundError as exc:
            raise DeployError("docker is not installed (swarm-up and swarm-down drive the docker CLI)") from exc


@dataclass(frozen=True)
class UpOptions:
    """What swarm-up and swarm-down are told (make variables: docs/swarm.md)."""

    stack: str = "gaiamesh"
    registry: str = DEFAULT_REGISTRY  # HOST:PORT every node pulls from
    registry_bind: str = "127.0.0.1"  # where our registry container is published on its engine
    registry_start: str = "auto"  # yes | no | auto (run ours when REGISTRY names this engine)
    registry_image: str = "gaiamesh-registry:0.1.0"
    advertise_addr: str | None = None  # docker swarm init --advertise-addr
    replicas: Mapping[str, int] = field(default_factory=dict)
    timeout: float = 300.0  # seconds for the registry, the services, the stack's removal
    folder: Path = Path("build/swarm")  # stack.yaml, digests.json, secrets/, state.json

    @property
    def state_file(self) -> Path:
        return self.folder / "state.json"


class Session:
    """One swarm-up or swarm-down against one engine: its state entry saved after every change,
    so that a swarm-up that fails half-way can still be undone by swarm-down."""

    def __init__(self, docker: Docker, options: UpOptions, say: Say) -> None:
        self.docker, self.options, self.say = docker, options, say
        self.engine = self._engine()
        self.state = load_state(options.state_file)
        self.made = self.state.setdefault(self.engine.id, Made())
        self.made.docker_host = os.environ.get("DOCKER_HOST", "") or "(the docker CLI's default engine)"

    def _engine(self) -> Engine:
        info = json.loads(self.docker("info", "--format", "{{json .}}"))
        if not info.get("ID"):
            raise DeployError("`docker info` names no engine id: is the engine running?")
        return Engine.from_info(info)

    def save(self) -> None:
        save_state(self.options.state_file, self.state)

    def step(self, number: int, text: str) -> None:
        self.say(f"swarm-up [{number}/{UP_STEPS + 1}] {text}")

    def nodes(self) -> list[Node]:
        ids = self.docker("node", "ls", "-q").split()
        return [Node.from_inspect(n) for n in json.loads(self.docker("node", "inspect", *ids))] if ids else []

    def stack_services(self) -> dict[str, tuple[int, int]]:
        out = self.docker("service", "ls", "--filter", f"label={STACK_NAMESPACE}={self.options.stack}",
                          "--format", "{{.Name}} {{.Replicas}}")  # fmt: skip
        services = parse_service_ls(out)
        if not services:
            return services
        fmt = "{{.Spec.Name}} {{if .UpdateStatus}}{{.UpdateStatus.State}}{{end}}"
        return still_updating(services, self.docker("service", "inspect", "--format", fmt, *services))


# --- swarm-up ----------------------------------------------------------------------------------
def swarm_up(docker: Docker, options: UpOptions, config: Mapping[str, Any], say: Say) -> dict[str, Any]:
    """Steps 1-7: a swarm, labelled nodes, images, the registry, pushed images, secrets, the
    stack with every replica running. ``config`` is ``docker compose config --format json``;
    returns the stack file's document."""
    s = Session(docker, options, say)
    _swarm(s)
    _labels(s)
    images = _images(s, config)
    _registry(s)
    digests = _push(s, images)
    stack = _stack_file(s, config, digests)
    _deploy(s, stack.path)
    return stack.document


def _swarm(s: Session) -> None:
    if swarm_action(s.engine) == "use":
        whose = "made by swarm-up" if s.made.made_swarm(s.engine) else "not made here: swarm-down will not leave it"
        s.step(1, f"swarm: this engine manages swarm {s.engine.cluster[:12]} ({whose})")
        return
    try:
        s.docker(*init_argv(s.options.advertise_addr))
    except DeployError as exc:
        hint = " (set ADVERTISE_ADDR to the address the other nodes reach)" if "advertise" in str(exc) else ""
        raise DeployError(f"{exc}{hint}") from exc
    s.engine = s._engine()
    s.made.cluster = s.engine.cluster  # the marker: swarm-down leaves this swarm, and no other
    s.save()
    s.step(1, f"swarm: none was active; initialised swarm {s.engine.cluster[:12]} on {s.engine.node_addr} "
              "(swarm-down will leave it)")  # fmt: skip


def _labels(s: Session) -> None:
    nodes = s.nodes()
    plan = label_plan(nodes, s.engine.node_id)
    names = {n.id: n.hostname or n.id[:12] for n in nodes}
    for node, label in plan:
        s.docker("node", "update", "--label-add", f"{label}=true", node)
        if [node, label] not in s.made.labels:
            s.made.labels.append([node, label])
        s.save()
    done = ", ".join(f"{names[n]} {label}=true" for n, label in plan) or "every node already labelled"
    s.step(2, f"nodes: {len(nodes)} in the swarm; {done}")


def _images(s: Session, config: Mapping[str, Any]) -> list[str]:
    """The images the stack runs, present on the engine (built with make where missing), and the
    signing keys the stack mounts (made here, not by `make keys`, which runs a container)."""
    built, other = project_images(config)
    wanted = [*built, *other] + ([s.options.registry_image] if _own_registry(s) else [])
    missing = [image for image in wanted if s.docker.probe("image", "inspect", image) is None]
    foreign = sorted(set(missing) - set(built) - {s.options.registry_image})
    if foreign:
        raise DeployError(f"images the stack needs are not on this engine, and no make target builds them: "
                          f"{', '.join(foreign)} (pull or load them first)")  # fmt: skip
    for target in make_targets(missing, built, s.options.registry_image):
        s.say(f"swarm-up: building with `make {target}` (missing: {', '.join(missing)})")
        s.docker.make(target)
    keys = ensure_keys(config)
    s.step(3, f"images: {', '.join(wanted)} present ({len(missing)} built){keys}")
    return [*built, *other]


def _own_registry(s: Session) -> bool:
    return runs_own_registry(s.options.registry, s.options.registry_start, s.engine)


def _registry(s: Session) -> None:
    if not _own_registry(s):
        s.step(4, f"registry: {s.options.registry} (not run here: REGISTRY_START={s.options.registry_start})")
        return
    _, port = registry_host_port(s.options.registry)
    deadline = time.monotonic() + s.options.timeout
    while True:
        action = container_action(container_state(s.docker))
        if action == "ready":
            break
        if action == "run":
            if s.docker.probe("volume", "inspect", REGISTRY_VOLUME) is None:
                s.made.registry_volume = REGISTRY_VOLUME
            s.docker(*registry_run_argv(s.options.registry_image, s.options.registry_bind, port))
            s.made.registry_container = REGISTRY_CONTAINER
            s.save()
        elif action == "start":
            s.docker("start", REGISTRY_CONTAINER)
        if time.monotonic() >= deadline:
            logs = s.docker.probe("logs", "--tail", "20", REGISTRY_CONTAINER) or ""
            raise DeployError(f"the registry container {REGISTRY_CONTAINER} is not healthy after "
                              f"{s.options.timeout:.0f} s; its last log lines:\n{logs}")  # fmt: skip
        time.sleep(1)  # polling the container's health: docker gives the CLI no event for it
    whose = "started by swarm-up" if s.made.registry_container else "already there: swarm-down leaves it"
    s.step(4, f"registry: container {REGISTRY_CONTAINER} healthy on {s.options.registry_bind}:{port} ({whose})")


def container_state(docker: Docker) -> dict[str, Any] | None:
    out = docker.probe("container", "inspect", "--format", "{{json .State}}", REGISTRY_CONTAINER)
    return dict(json.loads(out)) if out else None


def _push(s: Session, images: list[str]) -> dict[str, str]:
    """Each image tagged into the registry and pushed; its digest from push's output, or from the
    image's RepoDigests. Written to digests.json, the file swarm-stack --digests reads."""
    digests: dict[str, str] = {}
    for image in images:
        target = f"{s.options.registry}/{image}"
        s.docker("tag", image, target)
        digest = pushed_digest(s.docker("push", target))
        if digest is None:
            inspect = json.loads(s.docker("image", "inspect", "--format", "{{json .RepoDigests}}", target))
            digest = repo_digest(inspect or [], repository(s.options.registry, image))
        if digest is None:
            raise DeployError(f"pushed {target}, but neither docker push nor the image names its digest")
        digests[image] = digest
    path = s.options.folder / "digests.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(digests_json(digests), encoding="utf-8")
    s.step(5, f"push: {len(digests)} images in {s.options.registry} ({path})")
    return digests


@dataclass(frozen=True)
class _Written:
    path: Path
    document: dict[str, Any]


def _stack_file(s: Session, config: Mapping[str, Any], digests: Mapping[str, str]) -> _Written:
    """Step 6, the secrets, and the stack file. The secrets are file secrets (swarm-stack's
    --secrets-dir), not external ones: `docker stack deploy` creates them from .env's values and
    `docker stack rm` removes them, so their values always match .env (an external secret left
    from an earlier key would lock `gaiamesh submit` out) and swarm-down has nothing to track."""
    secrets_dir = (s.options.folder / "secrets").resolve()
    options = StackOptions(s.options.registry, digests, s.options.replicas, str(secrets_dir),
                           fingerprints(config), s.options.stack)  # fmt: skip
    stack = stack_from_compose(config, options)
    write_secrets(secrets_dir, stack.secret_values)
    s.step(6, f"secrets: {', '.join(sorted(stack.secret_values))} from .env, as files in {secrets_dir} (mode 0600)")
    path = s.options.folder / "stack.yaml"
    path.write_text(stack.render(), encoding="utf-8")
    return _Written(path, stack.document)


def _deploy(s: Session, path: Path) -> None:
    # --resolve-image never: every image is pinned by digest already, so the manager need not ask
    # the registry; --prune: services of an earlier swarm-up that the stack no longer has go.
    s.docker("stack", "deploy", "-c", str(path), "--prune", "--resolve-image", "never", s.options.stack)
    s.say(f"swarm-up: deployed {path} as stack {s.options.stack}; waiting for every replica")
    services = wait_for(s, lambda services: bool(services) and not not_ready(services), "start")
    s.step(7, f"stack {s.options.stack}: {progress_line(services, s.options.stack)}")


def wait_for(s: Session, done: Callable[[dict[str, tuple[int, int]]], bool], what: str) -> dict[str, tuple[int, int]]:
    """Poll the stack's services until ``done``, a line each time the picture changes."""
    deadline = time.monotonic() + s.options.timeout
    last = ""
    while True:
        services = s.stack_services()
        if done(services):
            return services
        line = progress_line(services, s.options.stack)
        if line != last:
            s.say(f"swarm-{'up' if what == 'start' else 'down'}: {line}")
            last = line
        if time.monotonic() >= deadline:
            raise DeployError(f"services did not {what} within {s.options.timeout:.0f} s: "
                              f"{', '.join(not_ready(services))}\n{_task_errors(s, not_ready(services))}")  # fmt: skip
        time.sleep(POLL)  # polling (see POLL)


def _task_errors(s: Session, services: list[str]) -> str:
    """What swarm says about each service's tasks (`docker service ps --no-trunc`: the node,
    the state and the error, such as a missing image or an unmet placement constraint)."""
    fmt = "{{.Name}}  {{.Node}}  {{.CurrentState}}  {{.Error}}"
    return "\n".join(f"-- {name}:\n{s.docker.probe('service', 'ps', '--no-trunc', '--format', fmt, name) or ''}"
                     for name in services)  # fmt: skip


def api_node(docker: Docker, options: UpOptions) -> str:
    """The node that runs the network service (whose address reaches the API), for the user."""
    out = docker.probe("service", "ps", f"{options.stack}_{API_SERVICE}", "--filter", "desired-state=running",
                       "--format", "{{.Node}}")  # fmt: skip
    return (out or "").strip().split("\n")[0] or "?"
