"""A deployed swarm stack: ``bench-swarm`` (runs at 1, 2, 4 replicas per agent service) and
``bench-swarm-latency`` (round trips same-node against cross-node)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.table import Table

from ..errors import ConfigError
from .common import Subparsers, console


def add_commands(sub: Subparsers) -> None:
    """Add this module's commands to ``gaiamesh``."""
    _add_swarm(sub)
    _add_swarm_latency(sub)


def _cmd_bench_swarm(args: argparse.Namespace) -> int:
    from ..bench.swarm.scale import measure
    from ..settings import load_settings

    key = load_settings().access_key
    if not key:
        raise ConfigError("GAIAMESH_ACCESS_KEY is not set (it is in .env after make setup)")
    levels = [int(n) for n in args.replicas.split(",")]
    rows = measure(args.url, key, args.stack, levels, args.runs, args.task, Path(args.out), console.print)
    table = Table(title="bench-swarm")
    for col in ("replicas", "runs", "ok", "runs/min", "elapsed ms p50", "decode µs p50", "bytes/run p50"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(str(r.replicas), str(r.runs), str(r.ok), f"{r.runs_per_min:.2f}", f"{r.elapsed_ms_p50:.0f}",
                      "-" if r.decode_us_p50 is None else f"{r.decode_us_p50:.0f}", f"{r.bytes_per_run_p50:.0f}")  # fmt: skip
    console.print(table)
    return 0


def _add_swarm(sub: Subparsers) -> None:
    sw = sub.add_parser("bench-swarm", help="a deployed swarm stack at 1, 2, 4 replicas per agent service (DOCKER_HOST)")
    sw.add_argument("--url", default="http://127.0.0.1:8080", help="the stack's API")
    sw.add_argument("--stack", default="gaiamesh", help="the stack's name (default gaiamesh)")
    sw.add_argument("--replicas", default="1,2,4", help="levels, comma-separated (default 1,2,4)")
    sw.add_argument("--runs", type=int, default=8, help="runs per level (default 8)")
    sw.add_argument("--task", default="solar-farm", help="the bundled task each run answers")
    sw.add_argument("--out", default="bench/swarm")
    sw.set_defaults(func=_cmd_bench_swarm)


def _cmd_bench_swarm_latency(args: argparse.Namespace) -> int:
    from ..bench.swarm.latency import measure, ratios
    from ..deploy.swarmrun import Docker

    result = measure(Docker(), args.stack, args.service, args.count, args.warmup, args.frame_bytes, args.timeout,
                     Path(args.out), console.print)  # fmt: skip
    table = Table(title=f"bench-swarm-latency (relay on {result.relay_node}, frame {result.frame_size} B)")
    for col in ("measure", "pairs", "agents", "round trips", "p50 ms", "p95 ms", "mean ms"):
        table.add_column(col, justify="right")
    for r in result.rows:
        table.add_row(r.kind, r.group, str(r.agents), str(r.n), f"{r.p50_ms:.3f}", f"{r.p95_ms:.3f}", f"{r.mean_ms:.3f}")
    console.print(table)
    for kind, x in ratios(result.rows).items():
        console.print(f"{kind}: cross-node / same-node = " + ", ".join(f"{k.removesuffix('_ms')} {v:.2f}x" for k, v in x.items()))
    console.print(f"wrote {args.out}/swarm-latency.json and swarm-latency.md")
    return 0


def _add_swarm_latency(sub: Subparsers) -> None:
    sl = sub.add_parser("bench-swarm-latency", help="round trips from the relay's container to agents on its node "
                        "and on other nodes of a deployed swarm stack (DOCKER_HOST: the network service's node)")  # fmt: skip
    sl.add_argument("--stack", default="gaiamesh", help="the stack's name (default gaiamesh)")
    sl.add_argument("--service", default="agent-search",
                    help="the agent service spread to one replica per node while measuring (default agent-search)")
    sl.add_argument("--count", type=int, default=200, help="round trips of each kind to each agent (default 200)")
    sl.add_argument("--warmup", type=int, default=20, help="unrecorded round trips first (default 20)")
    sl.add_argument("--frame-bytes", type=int, default=2048, help="the frame sent before a ping (default 2048)")
    sl.add_argument("--timeout", type=float, default=300, help="for the service's update and the agents' start (s)")
    sl.add_argument("--out", default="bench/swarm")
    sl.set_defaults(func=_cmd_bench_swarm_latency)
