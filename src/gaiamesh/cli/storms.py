"""Agents and links under stress: ``bench-failstorm`` (agents killed and restarted during a batch),
``bench-faults`` (a batch under network faults) and ``bench-flood`` (one agent floods the relay)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.table import Table

from ..errors import ConfigError, TaskError
from ..tasks import load_task
from .common import TASKS_HELP, Subparsers, common_options, console, matrix, settings_from


def _cmd_bench_failstorm(args: argparse.Namespace) -> int:
    from ..bench.storms.failstorm import Storm, run_failstorm
    from ..tasks import discover_tasks

    settings = settings_from(args)
    tasks = discover_tasks(args.tasks)[: args.limit or None]
    if not tasks:
        raise TaskError(f"no task folders under {args.tasks}")
    storm = Storm(args.kill, args.every, args.seed, args.grace, args.max_kills)
    if args.compose:
        from ..bench.storms.compose import run_compose_failstorm

        if not settings.access_key:
            raise ConfigError("GAIAMESH_ACCESS_KEY is empty (make setup writes it into .env)")
        result = run_compose_failstorm(
            args.compose, args.url, settings.access_key, Path(args.results), tasks, Path(args.out), storm
        )
    else:
        result = run_failstorm(settings, tasks, Path(args.out), storm, args.down)
    table = Table(title="fail-storm")
    table.add_column("measure")
    table.add_column("value")
    for key, value in result["summary"].items():
        table.add_row(key, str(value))
    table.add_row("audits", "all ok" if result["audits_ok"] else "MISMATCH")
    console.print(table)
    console.print(f"wrote {args.out}/failstorm.json, failstorm.md, failstorm.png")
    return 0 if result["audits_ok"] else 1


def _cmd_bench_faults(args: argparse.Namespace) -> int:
    from ..bench.storms.faults import CALM, COLUMNS, cell, grid, run_faults
    from ..tasks import discover_tasks

    settings = settings_from(args)
    if args.replay:
        settings = settings.model_copy(update={"llm_backend": "replay", "replay_from": Path(args.replay)})
    settings = settings.model_copy(update={"fault_seed": args.seed})
    protocols = matrix(args.protocols)
    tasks = discover_tasks(args.tasks)[: args.limit or None]
    if not tasks:
        raise TaskError(f"no task folders under {args.tasks}")
    every = grid(args.latency, args.jitter, args.loss, args.partition_agent, args.partition_at,
                 args.partition_for, args.slow_agent, args.slow_ms)  # fmt: skip
    chosen = [f.strip() for f in args.faults.split(",") if f.strip()]
    unknown = [f for f in chosen if f not in every]
    if unknown:
        raise ConfigError(f"unknown fault(s) {', '.join(unknown)}; choose from {', '.join(f for f in every if f != CALM)}")
    faults = {CALM: every[CALM], **{f: every[f] for f in chosen}}
    result = run_faults(settings, tasks, protocols, faults, Path(args.out), args.base_port)
    table = Table(title="network faults (quality retained and time added: against the same tasks calm)")
    for _, head in COLUMNS:
        table.add_column(head)
    for row in result["summary"]:
        table.add_row(*(cell(k, row[k]) for k, _ in COLUMNS))
    console.print(table)
    console.print(f"wrote {args.out}/faults.json, faults.md, faults.png")
    return 0 if all(row["audits_ok"] for row in result["summary"]) else 1


def _cmd_bench_flood(args: argparse.Namespace) -> int:
    from ..bench.storms.flood import run_flood

    task = load_task(Path(args.task))
    result = run_flood(settings_from(args), task, Path(args.out), args.seconds)
    console.print(f"wrote {args.out}/flood.json, flood.md")
    flood = result["flood"]
    ok = flood["audit_ok"] and flood["status"] == "ok" and flood["logged_from_flooder"] == flood["sent_total"]
    return 0 if ok else 1


def add_commands(sub: Subparsers) -> None:
    """Add this module's commands to ``gaiamesh``."""
    _add_failstorm(sub)
    _add_faults(sub)
    _add_flood(sub)


def _add_failstorm(sub: Subparsers) -> None:
    storm = sub.add_parser(
        "bench-failstorm", help="agents killed and restarted during a batch: recovery, retention"
    )
    storm.add_argument("--tasks", default="tasks", help=TASKS_HELP)
    storm.add_argument("--limit", type=int, default=0, help="use only the first N tasks")
    storm.add_argument("--kill", type=int, default=3, help="agents killed each time (default 3 of 8)")
    storm.add_argument("--every", type=float, default=15.0, help="seconds between kills (default 15)")
    storm.add_argument("--max-kills", type=int, default=0, help="stop the storm after N kills (default 0: no cap)")
    storm.add_argument("--down", type=float, default=3.0, help="seconds before a killed agent restarts")
    storm.add_argument("--seed", type=int, default=1, help="which agents die (random, seeded)")
    storm.add_argument(
        "--grace",
        type=float,
        default=10.0,
        help="REJOIN_GRACE: seconds a run waits when all agents of a tool are down (default 10)",
    )
    storm.add_argument(
        "--compose",
        metavar="PROJECT",
        default="",
        help="storm a running compose stack (--profile wide) of this project: SIGKILL, restart policy",
    )
    storm.add_argument("--url", default="http://127.0.0.1:8080", help="with --compose: the network service")
    storm.add_argument("--results", default="results", help="with --compose: the host folder of RESULTS_DIR")
    storm.add_argument("--out", default="bench/failstorm")
    common_options(storm)
    storm.set_defaults(func=_cmd_bench_failstorm)


def _add_faults(sub: Subparsers) -> None:
    faults = sub.add_parser(
        "bench-faults", help="a batch calm, then under network faults (latency, loss, partition, slow agent)"
    )
    faults.add_argument("--tasks", default="tasks", help=TASKS_HELP)
    faults.add_argument("--limit", type=int, default=0, help="use only the first N tasks")
    faults.add_argument("--protocols", default="json,binary")
    faults.add_argument("--faults", default="latency,loss,partition,slow", help="which of the grid to run (and calm)")
    faults.add_argument("--latency", type=float, default=50.0, help="ms on every link, each way (default 50)")
    faults.add_argument("--jitter", type=float, default=20.0, help="± ms around --latency (default 20)")
    faults.add_argument("--loss", type=float, default=0.05, help="share of the relay's copies lost (default 0.05)")
    faults.add_argument("--partition-agent", default="1", help="node id cut off (default 1)")
    faults.add_argument("--partition-at", type=float, default=0.0, help="seconds into the run (default 0)")
    faults.add_argument("--partition-for", type=float, default=10.0, help="seconds (default 10)")
    faults.add_argument("--slow-agent", default="2", help="node id of the slow agent (default 2)")
    faults.add_argument("--slow-ms", type=float, default=500.0, help="ms more each way (default 500)")
    faults.add_argument("--seed", type=int, default=1, help="FAULT_SEED: the same seed, the same faults")
    faults.add_argument("--out", default="bench/faults")
    faults.add_argument("--base-port", type=int, default=0, help="first agent port (default: free ports)")
    faults.add_argument(
        "--replay", metavar="FROM",
        help="answer every model call from the runs under FROM (an earlier bench's --out): no model server",
    )  # fmt: skip
    common_options(faults)
    faults.set_defaults(func=_cmd_bench_faults)


def _add_flood(sub: Subparsers) -> None:
    flood = sub.add_parser(
        "bench-flood", help="one agent floods the relay with good and bad frames while the others work"
    )
    flood.add_argument("--task", default="tasks/solar-farm", help="the task the honest agents answer")
    flood.add_argument("--seconds", type=float, default=10.0, help="how long the flood lasts (default 10)")
    flood.add_argument("--out", default="bench/flood")
    common_options(flood)
    flood.set_defaults(func=_cmd_bench_flood)
