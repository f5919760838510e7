"""The comparison's commands: ``bench`` (every task under every protocol, repeated), ``report`` (the
same files from folders of ``metrics.json``) and ``bench-compose`` (the comparison on a running
compose stack, through its API)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import ConfigError, TaskError
from ..settings import TASK_STRATEGIES
from .common import TASKS_HELP, Subparsers, common_options, console, errors, matrix, settings_from, transports


def _cmd_bench(args: argparse.Namespace) -> int:
    from ..bench.compare.run import run_bench
    from ..tasks import discover_tasks

    settings = settings_from(args)
    if args.replay:
        if args.baseline:
            raise ConfigError("--baseline asks the live model once per task; a replay has no model to ask")
        settings = settings.model_copy(update={"llm_backend": "replay", "replay_from": Path(args.replay)})
    protocols = matrix(args.protocols, args.repeat)
    tasks = discover_tasks(args.tasks)[: args.limit or None]
    if not tasks:
        raise TaskError(f"no task folders under {args.tasks}")
    strategies = [s.strip() for s in (args.strategies or settings.strategy).split(",") if s.strip()]
    # --ablate triple,extract: one variant per item ("none" = every stage); a+b leaves out both
    ablations = [("" if a.strip() == "none" else a.strip().replace("+", ",")) for a in (args.ablate or "").split(",")
                 if a.strip()] or None  # fmt: skip
    unknown = [s for s in strategies if s not in TASK_STRATEGIES]
    if unknown:
        raise ConfigError(f"unknown strategy {unknown[0]!r}; choose from {', '.join(TASK_STRATEGIES)}")
    rows = run_bench(
        settings, tasks, protocols, args.repeat, Path(args.out), args.base_port, args.baseline, strategies,
        ablations, args.seed, transports(args.transports, protocols, strategies or [settings.strategy]), args.warm_up,
    )  # fmt: skip
    console.print(f"wrote {args.out}/results.csv, summary.md, comparison.png ({len(rows)} runs)")
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from ..bench.compare.report import write_reports
    from ..bench.compare.rows import collect

    rows = collect(Path(args.runs))
    if not rows:
        errors.print(f"[red]no metrics.json under {args.runs}[/red]")
        return 1
    write_reports(rows, Path(args.out or args.runs))
    return 0


def _cmd_bench_compose(args: argparse.Namespace) -> int:
    from ..bench.compare import compose as cb
    from ..tasks import discover_tasks

    settings = settings_from(args)
    if not settings.access_key:
        raise ConfigError("GAIAMESH_ACCESS_KEY is empty (make setup writes it into .env)")
    protocols = matrix(args.protocols, args.repeat)
    tasks = [t.path.name for t in discover_tasks(args.tasks)[: args.limit or None]]
    stack, out = cb.Stack(args.url, settings.access_key, args.project), Path(args.out)
    if args.record_only:
        failed = cb.record(stack, tasks, out)
        if failed:
            errors.print(f"[red]{failed} of {len(tasks)} records failed (their run.log says why); nothing to replay[/red]")
        return 1 if failed else 0
    how = cb.LIVE
    if args.replayed_from:
        cb.check_records(Path(args.replayed_from), tasks)
        how = cb.how_replayed(Path(args.replayed_from), settings.replay_pace)
    rows, failed = cb.compare(stack, cb.Matrix(tasks, protocols, args.repeat, args.seed), out, how)
    if failed:
        errors.print(f"[red]{failed} of {len(tasks) * len(protocols) * args.repeat} runs failed (their run.log says why)[/red]")
    return 1 if failed or not rows else 0


def add_bench(sub: Subparsers) -> None:
    """``gaiamesh bench``."""
    bench = sub.add_parser("bench", help="every task under every protocol, repeated: CSV, summary, plot")
    bench.add_argument("--tasks", default="tasks", help=TASKS_HELP)
    bench.add_argument("--protocols", default="json,binary,compressed,signed,a2a,anp,acp,agora")
    bench.add_argument("--transports", help="comma-separated: relay,native (default: TRANSPORT)")
    bench.add_argument("--strategies", help="comma-separated: pipeline,orchestrated (default: STRATEGY)")
    bench.add_argument(
        "--ablate",
        help="compare the pipeline with stages left out, e.g. none,triple,extract "
        "(a stage left out hands its input on unchanged; a+b leaves out both)",
    )
    bench.add_argument("--repeat", type=int, default=3)
    bench.add_argument("--limit", type=int, default=0, help="the first N tasks only (0: all)")
    bench.add_argument("--seed", type=int, default=0, help="the seed of the runs' shuffled order (default 0)")
    bench.add_argument("--out", default="bench")
    bench.add_argument("--base-port", type=int, default=0, help="first agent port (default: free ports)")
    bench.add_argument("--baseline", action="store_true", help="also score one direct model call per task")
    bench.add_argument(
        "--no-warm-up", dest="warm_up", action="store_false",
        help="no untimed warm-up run first: for a recording made to be replayed, whose times no row is compared by",
    )  # fmt: skip
    bench.add_argument(
        "--replay", metavar="FROM",
        help="answer every model call from the runs under FROM (an earlier bench's --out): no model server",
    )  # fmt: skip
    common_options(bench)
    bench.set_defaults(func=_cmd_bench)


def add_report(sub: Subparsers) -> None:
    """``gaiamesh report``."""
    report = sub.add_parser("report", help="summarize metrics.json files under a folder (e.g. compose runs)")
    report.add_argument("runs")
    report.add_argument("--out", help="where to write results.csv/summary.md/comparison.png (default: runs)")
    report.set_defaults(func=_cmd_report)


def add_compose(sub: Subparsers) -> None:
    """``gaiamesh bench-compose``."""
    bc = sub.add_parser("bench-compose", help="make bench: the protocol comparison on a running compose stack, "
                        "through its API (record + replay, or live)")  # fmt: skip
    bc.add_argument("--url", default="http://127.0.0.1:8080", help="the stack's network service")
    bc.add_argument("--project", required=True, help="the stack's compose project (its containers' load is the bench's)")
    bc.add_argument("--tasks", default="tasks", help="the task folders the stack mounts (default tasks/)")
    bc.add_argument("--protocols", default="json,binary,compressed,signed,a2a,anp,acp,agora")
    bc.add_argument("--repeat", type=int, default=1)
    bc.add_argument("--limit", type=int, default=0, help="the first N tasks only (0: all)")
    bc.add_argument("--seed", type=int, default=0, help="the seed of the runs' shuffled order (default 0)")
    bc.add_argument("--out", default="bench/compose")
    mode = bc.add_mutually_exclusive_group()
    mode.add_argument("--record-only", action="store_true",
                      help="run each task once under json on the live model, into OUT/records/<task>/")  # fmt: skip
    mode.add_argument("--replayed-from", metavar="RECORDS",
                      help="the stack's agents replay these records (LLM_BACKEND=replay): say so in the summary")  # fmt: skip
    bc.set_defaults(func=_cmd_bench_compose)
