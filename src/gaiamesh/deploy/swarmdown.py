"""The docker commands of ``gaiamesh swarm-down`` (docs/swarm.md): undo swarm-up on one engine,
the stack first, then only what the state file says swarm-up made. Each step is idempotent and
reported in one line; the session and the docker CLI are :mod:`.swarmrun`'s."""

from __future__ import annotations

from .swarmrun import Docker, Say, Session, UpOptions, container_state, wait_for
from .swarmup import REGISTRY_CONTAINER, STACK_NAMESPACE, labels_to_remove


def swarm_down(docker: Docker, options: UpOptions, say: Say, volumes: bool = False) -> None:
    """Undo swarm-up on this engine: the stack, then only what the state file says swarm-up
    made (the registry container, its volume with ``volumes``, node labels, the swarm)."""
    s = Session(docker, options, say)
    in_swarm = s.engine.swarm_state == "active" and s.engine.manager
    if in_swarm:
        _remove_stack(s)
    elif s.engine.swarm_state == "inactive":
        say("swarm-down: this engine is in no swarm: no stack to remove")
        s.made.cluster, s.made.labels = "", []  # whatever swarm-up made of a swarm has gone with it
    else:  # a worker, a locked swarm: the record stays for a swarm-down that can act on it
        say(f"swarm-down: this engine's swarm is {s.engine.swarm_state}"
            f"{'' if s.engine.manager else ' and it is no manager'}: the stack is left (point DOCKER_HOST at a manager)")  # fmt: skip
    _remove_registry(s, volumes)
    if in_swarm:
        _remove_labels(s)
        _leave(s)
    s.save()


def _remove_stack(s: Session) -> None:
    stacks = (s.docker.probe("stack", "ls", "--format", "{{.Name}}") or "").split()
    if s.options.stack not in stacks:
        s.say(f"swarm-down: no stack {s.options.stack}")
        return
    s.docker.probe("stack", "rm", s.options.stack)  # may report a network still in use: swept below
    wait_for(s, lambda services: not services and _sweep(s), "go")
    s.say(f"swarm-down: stack {s.options.stack} removed (services, networks, secrets, configs)")


def _sweep(s: Session) -> bool:
    """Remove what `docker stack rm` left of the stack (a network whose last task had not yet
    gone); True when nothing labelled with the stack is left."""
    label = f"label={STACK_NAMESPACE}={s.options.stack}"
    left = False
    for kind in ("network", "secret", "config"):
        for item in (s.docker.probe(kind, "ls", "-q", "--filter", label) or "").split():
            left |= s.docker.probe(kind, "rm", item) is None
    return not left


def _remove_registry(s: Session, volumes: bool) -> None:
    made = s.made
    if made.registry_container and container_state(s.docker) is not None:
        s.docker("rm", "-f", made.registry_container)
        s.say(f"swarm-down: registry container {made.registry_container} removed")
    elif not made.registry_container and container_state(s.docker) is not None:
        s.say(f"swarm-down: registry container {REGISTRY_CONTAINER} left running (swarm-up did not start it)")
    made.registry_container = ""
    if made.registry_volume and volumes:
        s.docker.probe("volume", "rm", made.registry_volume)
        s.say(f"swarm-down: volume {made.registry_volume} removed")
        made.registry_volume = ""
    elif made.registry_volume:
        s.say(f"swarm-down: volume {made.registry_volume} kept (the pushed layers; VOLUMES=1 removes it)")


def _remove_labels(s: Session) -> None:
    nodes = [n.id for n in s.nodes()]
    for node, label in labels_to_remove(s.made, s.engine, nodes):
        s.docker.probe("node", "update", "--label-rm", label, node)
    if s.made.labels and not s.made.made_swarm(s.engine):
        s.say(f"swarm-down: removed the {len(s.made.labels)} node labels swarm-up set")
    s.made.labels = []


def _leave(s: Session) -> None:
    if not s.made.made_swarm(s.engine):
        s.say("swarm-down: the swarm stays (swarm-up did not initialise it)")
        return
    others = [n for n in s.nodes() if n.id != s.engine.node_id]
    s.docker("swarm", "leave", "--force")
    s.made.cluster = ""
    s.made.labels = []
    note = f"; {len(others)} other nodes must leave it themselves (`docker swarm leave`)" if others else ""
    s.say(f"swarm-down: left the swarm swarm-up initialised{note}")
