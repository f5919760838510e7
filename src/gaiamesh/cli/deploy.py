"""Commands that deploy the project beyond one compose project: the swarm stack file."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from ..errors import ConfigError
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


def _write_secrets(folder: Path, values: dict[str, str]) -> None:
    """The file-based secrets' values, readable by their owner only (docker stack deploy reads
    them on this machine and hands them to swarm; they never enter the stack file)."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    for name, value in values.items():
        path = folder / name
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(value)


def _cmd_swarm_stack(args: argparse.Namespace) -> int:
    from ..deploy.swarm import StackOptions, parse_digests, parse_replicas, stack_from_compose

    if args.compose_config:
        config = _read_config(args.compose_config)
    else:
        config = compose_config(args.profile, args.env_file)
    digests = parse_digests(Path(args.digests).read_text(encoding="utf-8")) if args.digests else {}
    secrets_dir = str(Path(args.secrets_dir).resolve()) if args.secrets_dir else None
    options = StackOptions(args.registry, digests, parse_replicas(args.replicas), secrets_dir)
    stack = stack_from_compose(config, options)
    if secrets_dir:
        _write_secrets(Path(secrets_dir), stack.secret_values)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(stack.render(), encoding="utf-8")
    console.print(f"swarm-stack: wrote {out} ({len(stack.document['services'])} services)")
    if not secrets_dir:
        external = [n for n, s in stack.document.get("secrets", {}).items() if s.get("external")]
        if external:
            console.print(f"external secrets to create first (docker secret create NAME -): {', '.join(external)}")
    return 0


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
    _add_cluster(sub)


def _cmd_swarm_cluster(args: argparse.Namespace) -> int:
    from ..deploy import cluster

    spec = cluster.ClusterSpec(name=args.name, nodes=args.nodes, subnet=args.subnet, checkout=str(Path.cwd()))
    if args.action == "up":
        cluster.up(spec, console.print)
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
    sp.add_argument("--subnet", default="172.31.250.0/24", help="its network (default 172.31.250.0/24)")
    sp.add_argument("--load", action="append", default=[], help="image to copy into the manager's engine (repeatable)")
    sp.set_defaults(func=_cmd_swarm_cluster)
