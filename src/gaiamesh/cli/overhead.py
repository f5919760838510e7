"""What the harness costs: ``bench-overhead`` (relay cost per frame and the model server's speed)
and ``bench-concurrency`` (runs per minute at each ``MAX_CONCURRENT_RUNS``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import TASKS_HELP, Subparsers, common_options, console, settings_from


def _cmd_bench_overhead(args: argparse.Namespace) -> int:
    from ..bench.overhead.run import run_overhead
    from ..deploy.local import ProcessGroup, model_server
    from ..models.modelserver import bundled_model_path

    settings = settings_from(args)
    out = Path(args.out)
    fanouts = [int(n) for n in args.fanout.split(",") if n.strip()]
    if args.relays_only:
        run_overhead(out, args.frames, args.fanout_frames, fanouts, args.rounds, None)
        return 0
    group = ProcessGroup(out / "logs")
    try:
        with model_server(settings, group):
            path = settings.model_path or bundled_model_path()
            model = (settings.ollama_host, settings.model, path, args.tokens, args.repeat)
            run_overhead(out, args.frames, args.fanout_frames, fanouts, args.rounds, model)
    finally:
        group.stop_all()
    return 0


def _cmd_bench_concurrency(args: argparse.Namespace) -> int:
    from ..bench.overhead.concurrency import run_concurrency_bench
    from ..tasks import discover_tasks

    settings = settings_from(args)
    levels = [int(n) for n in args.levels.split(",") if n.strip()]
    names = [t.path.name for t in discover_tasks(args.tasks)]
    tasks = [names[i % len(names)] for i in range(args.runs)]
    run_concurrency_bench(
        settings.model_copy(update={"tasks_dir": Path(args.tasks)}), levels, tasks, Path(args.out)
    )
    console.print(f"wrote {args.out}/concurrency.json and concurrency.md")
    return 0


def add_overhead(sub: Subparsers) -> None:
    """``gaiamesh bench-overhead``."""
    over = sub.add_parser("bench-overhead", help="relay cost per frame and model server speed, side by side")
    over.add_argument("--frames", type=int, default=2000, help="round trips per path (default 2000)")
    over.add_argument("--fanout-frames", type=int, default=5000, help="frames per fan-out measurement")
    over.add_argument("--rounds", type=int, default=5, help="rounds over every path (medians; default 5)")
    over.add_argument("--fanout", default="4,16", help="subscriber counts for fan-out (default 4,16)")
    over.add_argument("--relays-only", action="store_true", help="skip the model server comparison")
    over.add_argument("--tokens", type=int, default=128, help="tokens generated per model sample")
    over.add_argument("--repeat", type=int, default=3, help="model samples per side")
    over.add_argument("--out", default="bench")
    common_options(over)
    over.set_defaults(func=_cmd_bench_overhead)


def add_concurrency(sub: Subparsers) -> None:
    """``gaiamesh bench-concurrency``."""
    conc = sub.add_parser(
        "bench-concurrency", help="runs per minute at each MAX_CONCURRENT_RUNS, side by side"
    )
    conc.add_argument("--levels", default="1,2,3", help="MAX_CONCURRENT_RUNS values (default 1,2,3)")
    conc.add_argument("--runs", type=int, default=6, help="runs submitted at once per level (default 6)")
    conc.add_argument("--tasks", default="tasks", help=TASKS_HELP)
    conc.add_argument("--out", default="bench")
    common_options(conc)
    conc.set_defaults(func=_cmd_bench_concurrency)
