"""Commands that deploy the project beyond one compose project: the swarm stack file, and
swarm-up / swarm-down (docs/swarm.md)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from ..errors import ConfigError, DeployError
from .common import Subparsers, console


def compose_config(profiles: list[str], env_file: str | None) -> dict[str, Any]:
    """``docker compose config --format json`` of the project in the current folder: compose
    reads ``.env`` (or ``env_file``) and fills every default, which swarm would not."""
    argv = ["docker", "compose", *(["--env-file", env_file] if env_file else [])]
    argv += [arg for p in profiles for arg in ("--profile", p)]
    try:
        proc = subprocess.run([*argv, "config", "--format", "json"], capture_output=True, text=True, check=False)
    except FileNotFoundError as exc:
        raise ConfigError("docker is not installed: swarm-stack reads `docker compose config`") from exc
    if proc.returncode != 0:
        raise ConfigError(f"docker compose config failed: {proc.stderr.strip()}")
    return dict(json.loads(proc.stdout))


def _read_config(source: str) -> dict[str, Any]:
    text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    try:
        return dict(json.loads(text))
    except ValueError as exc:
        raise ConfigError(f"{source}: not the JSON of `docker compose config --format json`: {exc}") from exc


def _cmd_swarm_stack(args: argparse.Namespace) -> int:
    from ..deploy.stackfiles import fingerprints, write_secrets
    from ..deploy.swarm import StackOptions, parse_digests, parse_replicas, stack_from_compose

    if args.compose_config:
        config = _read_config(args.compose_config)
    else:
        config = compose_config(args.profile, args.env_file)
    digests = parse_digests(Path(args.digests).read_text(encoding="utf-8")) if args.digests else {}
    secrets_dir = str(Path(args.secrets_dir).resolve()) if args.secrets_dir else None
    options = StackOptions(args.registry, digests, parse_replicas(args.replicas), secrets_dir, fingerprints(config))
    stack = stack_from_compose(config, options)
    if secrets_dir:
        write_secrets(Path(secrets_dir), stack.secret_values)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(stack.render(), encoding="utf-8")
    console.print(f"swarm-stack: wrote {out} ({len(stack.document['services'])} services)")
    if not secrets_dir:
        external = [n for n, s in stack.document.get("secrets", {}).items() if s.get("external")]
        if external:
            console.print(f"external secrets to create first (docker secret create NAME -): {', '.join(external)}")
    return 0


def _up_options(args: argparse.Namespace) -> Any:
    from ..deploy.swarm import parse_replicas
    from ..deploy.swarmrun import UpOptions

    version = os.environ.get("GAIAMESH_VERSION") or "0.1.0"  # the Makefile's VERSION, which it exports
    return UpOptions(
        stack=args.stack, registry=args.registry, registry_bind=args.registry_bind,
        registry_start=args.registry_start, registry_image=f"gaiamesh-registry:{version}",
        advertise_addr=getattr(args, "advertise_addr", None) or None,
        replicas=parse_replicas(getattr(args, "replicas", [])),
        timeout=args.timeout,
    )  # fmt: skip


def _cmd_swarm_up(args: argparse.Namespace) -> int:
    from ..deploy.swarmrun import Docker, api_node, swarm_up

    if args.env_file:
        os.environ["GAIAMESH_ENV_FILE"] = args.env_file  # the settings (the access key) read what compose read
    options = _up_options(args)
    docker = Docker()
    stack = swarm_up(docker, options, compose_config(args.profile, args.env_file), console.print)
    if args.no_run:
        console.print("swarm-up [8/8] run: skipped (--no-run)")
        return 0
    return _run_bundled_task(args, stack, api_node(docker, options))


def _run_bundled_task(args: argparse.Namespace, stack: dict[str, Any], node: str) -> int:
    """Step 8: the task ``make up`` runs, through the API on the network node, as ``gaiamesh
    submit`` runs it (the same client, progress lines and summary)."""
    from ..deploy.swarmup import api_port, results_folder
    from ..settings import load_settings
    from .runs import submit_task

    url = f"http://{args.api_host}:{api_port(stack)}"
    console.print(f"swarm-up [8/8] run: the bundled task through the API at {url} (network service on node {node})")
    _wait_for_api(url, args.timeout)
    return submit_task(url, load_settings(), results_folder(stack))


def _wait_for_api(url: str, timeout: float) -> None:
    """The API answers /api/health (a replica that swarm calls running has passed its
    healthcheck, but the address may be the wrong one: say so instead of a bare refusal)."""
    from ..service.client import answers

    if not answers(url, timeout):
        raise DeployError(f"the API does not answer at {url}/api/health after {timeout:.0f} s: API_HOST must be "
                          "an address of the node that runs the network service")  # fmt: skip


def _cmd_swarm_down(args: argparse.Namespace) -> int:
    from ..deploy.swarmdown import swarm_down
    from ..deploy.swarmrun import Docker

    swarm_down(Docker(), _up_options(args), console.print, volumes=args.volumes)
    return 0


def _swarm_options(sp: argparse.ArgumentParser) -> None:
    """What swarm-up and swarm-down share (make variables of the same names in capitals)."""
    from ..deploy.swarm import DEFAULT_REGISTRY

    sp.add_argument("--stack", default="gaiamesh", help="the stack's name (STACK, default gaiamesh)")
    sp.add_argument("--registry", default=DEFAULT_REGISTRY,
                    help=f"HOST:PORT every node pulls the images from (REGISTRY, default {DEFAULT_REGISTRY})")  # fmt: skip
    sp.add_argument("--registry-bind", default="127.0.0.1",
                    help="address our registry container is published on (REGISTRY_BIND, default 127.0.0.1)")  # fmt: skip
    sp.add_argument("--registry-start", default="auto", choices=["auto", "yes", "no"],
                    help="run our registry container on this engine (REGISTRY_START; auto: when REGISTRY "
                         "is a loopback address or this node's swarm address)")  # fmt: skip
    sp.add_argument("--timeout", type=float, default=300.0,
                    help="seconds to wait for the registry, the services, the API, a removal (SWARM_TIMEOUT)")  # fmt: skip


def add_commands(sub: Subparsers) -> None:
    """Add this module's commands to ``gaiamesh``."""
    from ..deploy.swarm import DEFAULT_REGISTRY

    sp = sub.add_parser("swarm-stack", help="write a docker stack file derived from compose.yaml (docs/swarm.md)")
    sp.add_argument("--profile", action="append", default=[], help="compose profile to include (repeatable)")
    sp.add_argument("--env-file", help="the env file docker compose reads (default: .env)")
    sp.add_argument("--compose-config", help="read this `docker compose config --format json` output ('-': stdin)")
    sp.add_argument("--registry", default=DEFAULT_REGISTRY,
                    help=f"HOST:PORT every node pulls the images from (default {DEFAULT_REGISTRY}; '' keeps local names)")  # fmt: skip
    sp.add_argument("--digests", help="JSON file: image -> sha256:... digest (images named by digest)")
    sp.add_argument("--replicas", action="append", default=[], help="TOOL=N replicas of each agent of a tool")
    sp.add_argument("--secrets-dir", help="write the secrets' values here as files (default: external secrets)")
    sp.add_argument("--out", default="build/swarm/stack.yaml", help="the stack file (default build/swarm/stack.yaml)")
    sp.set_defaults(func=_cmd_swarm_stack)

    up = sub.add_parser("swarm-up", help="a swarm, the registry, the stack, and the bundled task run (docs/swarm.md)")
    _swarm_options(up)
    up.add_argument("--profile", action="append", default=[], help="compose profile to include (repeatable)")
    up.add_argument("--env-file", help="the env file docker compose and the settings read (default: .env)")
    up.add_argument("--replicas", action="append", default=[], help="TOOL=N replicas of each agent of a tool")
    up.add_argument("--advertise-addr", help="docker swarm init --advertise-addr, when a swarm is made (ADVERTISE_ADDR)")
    up.add_argument("--api-host", default="127.0.0.1",
                    help="address of the network service's node, where the API is published (API_HOST)")  # fmt: skip
    up.add_argument("--no-run", action="store_true", help="deploy only; do not run the bundled task")
    up.set_defaults(func=_cmd_swarm_up)

    down = sub.add_parser("swarm-down", help="remove the stack, and what swarm-up made (docs/swarm.md)")
    _swarm_options(down)
    down.add_argument("--volumes", action="store_true", help="also remove the registry's volume, if swarm-up made it")
    down.set_defaults(func=_cmd_swarm_down)
    _add_cluster(sub)


def _cmd_swarm_cluster(args: argparse.Namespace) -> int:
    from ..deploy import cluster

    spec = cluster.ClusterSpec(name=args.name, nodes=args.nodes, subnet=args.subnet, checkout=str(Path.cwd()))
    if args.action == "up":
        cluster.up(spec, console.print, swarm=not args.no_swarm)
        if args.load:
            cluster.load_images(spec, 1, args.load, console.print)
    elif args.action == "down":
        cluster.down(spec, console.print)
    else:  # env: for `eval $(gaiamesh swarm-cluster env)`
        print(f"export DOCKER_HOST={spec.docker_host(1)}")
    return 0


def _add_cluster(sub: Subparsers) -> None:
    sp = sub.add_parser("swarm-cluster", help="a test swarm of several Docker engines in containers (docs/swarm.md)")
    sp.add_argument("action", choices=["up", "down", "env"])
    sp.add_argument("--name", default="gaiamesh-swarm", help="prefix of its containers, volumes and network")
    sp.add_argument("--nodes", type=int, default=3, help="engines: 1 manager + workers (default 3)")
    sp.add_argument("--subnet", default="198.18.250.0/24", help="its network (default 198.18.250.0/24)")
    sp.add_argument("--no-swarm", action="store_true",
                    help="up: the engines alone, no swarm (as swarm-up finds a new machine)")  # fmt: skip
    sp.add_argument("--load", action="append", default=[], help="image to copy into the manager's engine (repeatable)")
    sp.set_defaults(func=_cmd_swarm_cluster)
