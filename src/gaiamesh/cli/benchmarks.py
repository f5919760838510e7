"""The benchmark commands: bench, plans, bench-overhead, bench-failstorm, bench-faults, bench-flood,
bench-concurrency, bench-swarm, bench-swarm-latency, and report over folders of metrics.json."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from rich.table import Table

from ..errors import ConfigError, TaskError
from ..settings import TASK_STRATEGIES
from ..tasks import load_task
from .common import Subparsers, common_options, console, errors, matrix, settings_from, transports


def _cmd_bench_concurrency(args: argparse.Namespace) -> int:
    from ..bench.concurrency import run_concurrency_bench
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


def _cmd_bench_failstorm(args: argparse.Namespace) -> int:
    from ..bench.failstorm import Storm, run_failstorm
    from ..tasks import discover_tasks

    settings = settings_from(args)
    tasks = discover_tasks(args.tasks)[: args.limit or None]
    if not tasks:
        raise TaskError(f"no task folders under {args.tasks}")
    storm = Storm(args.kill, args.every, args.seed, args.grace, args.max_kills)
    if args.compose:
        from ..bench.compose_storm import run_compose_failstorm

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
    from ..bench.faults import CALM, COLUMNS, cell, grid, run_faults
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
    from ..bench.flood import run_flood

    task = load_task(Path(args.task))
    result = run_flood(settings_from(args), task, Path(args.out), args.seconds)
    console.print(f"wrote {args.out}/flood.json, flood.md")
    flood = result["flood"]
    ok = flood["audit_ok"] and flood["status"] == "ok" and flood["logged_from_flooder"] == flood["sent_total"]
    return 0 if ok else 1


def _cmd_bench_plans(args: argparse.Namespace) -> int:
    from ..bench.plan_validity import measure, write_results
    from ..deploy.local import ProcessGroup, model_server
    from ..models.llm import LLMClient
    from ..tasks import discover_tasks

    settings = settings_from(args)
    tasks = discover_tasks(args.tasks)[: args.limit or None]
    group = ProcessGroup(Path(args.out) / "logs")
    try:
        with model_server(settings, group):
            llm = LLMClient.from_settings(settings)
            rows = asyncio.run(measure(llm, tasks))
    finally:
        group.stop_all()
    kind = settings.model_kind
    header = (f"`gaiamesh bench-plans --tasks {args.tasks} --limit {args.limit}`: model {settings.model} "
              f"via {settings.llm_backend} (MODEL_KIND={kind}), {len(tasks)} questions, each plan written "
              "once per mode at temperature 0")  # fmt: skip
    write_results(rows, Path(args.out), header)
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from ..bench.compare import run_bench
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


def _cmd_bench_compose(args: argparse.Namespace) -> int:
    from ..bench import compose_bench as cb
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


def _cmd_plans(args: argparse.Namespace) -> int:
    from rich.progress import Progress

    from ..models.llm import LLMClient
    from ..orchestrated.dryrun import dry_run, summarize, write_results
    from ..tasks import discover_tasks
    from ..tasks.sets import expand

    settings = settings_from(args)
    sets = {ref: discover_tasks(ref) for given in args.tasks for ref in expand(given)}
    results: dict[str, list[Any]] = {}

    async def run_all() -> None:
        llm = LLMClient.from_settings(settings)
        # the model server answers and serves MODEL (or one line says why), and holds plans to
        # the Plan schema where the orchestrator's agent would (SCHEMAS)
        profile = await llm.profile(need_schemas=settings.model_plans and settings.schemas != "off")
        schemas = bool(profile.schemas)
        with Progress(console=console, transient=True) as progress:
            bar = progress.add_task("plans", total=sum(len(t) for t in sets.values()))
            for folder, tasks in sets.items():
                results[folder] = []
                for task in tasks:
                    results[folder].append(await dry_run(task, settings, llm, schemas))
                    progress.advance(bar)

    asyncio.run(run_all())
    if args.verbose:
        for folder, runs in results.items():
            for r in runs:
                mark = "[green]ok[/green]" if r.exact_match else "[red]--[/red]"
                console.print(
                    f"{mark} {folder}/{r.task_id}: {r.outcome} {r.prediction!r} (gold {r.answer!r}; {r.plan})"
                )
    table = Table(title="orchestrated plans, dry run (no relay; questions left to the pipeline are not scored)")
    columns = ("set", "tasks", "exact", "em", "pipeline", "failed", "tokens")
    for col in columns:
        table.add_column(col, justify="left" if col == "set" else "right")
    rows = summarize(results)
    for row in rows:
        table.add_row(*(str(row[c]) for c in columns))
    console.print(table)
    write_results(results, Path(args.out))
    console.print(f"wrote {args.out}")
    return 0


def _cmd_bench_overhead(args: argparse.Namespace) -> int:
    from ..bench.overhead import run_overhead
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


def _cmd_report(args: argparse.Namespace) -> int:
    from ..bench.compare import collect, write_reports

    rows = collect(Path(args.runs))
    if not rows:
        errors.print(f"[red]no metrics.json under {args.runs}[/red]")
        return 1
    write_reports(rows, Path(args.out or args.runs))
    return 0


TASKS_HELP = "folder of task folders (default tasks/), or a task-set file (FILE.jsonl, FILE.jsonl#SET)"


def add_commands(sub: Subparsers) -> None:
    """Add this module's commands to ``gaiamesh``."""
    _add_bench(sub)
    _add_bench_compose(sub)
    _add_plans(sub)
    _add_overhead(sub)
    _add_failstorm(sub)
    _add_faults(sub)
    _add_load(sub)
    _add_swarm(sub)
    _add_swarm_latency(sub)


def _cmd_bench_swarm(args: argparse.Namespace) -> int:
    from ..bench.swarmscale import measure
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
    from ..bench.swarmlatency import measure, ratios
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


def _add_bench(sub: Subparsers) -> None:
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

    plans = sub.add_parser(
        "plans", help="orchestrated: run the plans in-process over task sets, with the model and without the relay"
    )
    plans.add_argument("tasks", nargs="+", help="task folders, folders of them, or .jsonl files (FILE#SET: one set)")
    plans.add_argument("--out", default="bench/plans.json", help="results file (JSON)")
    plans.add_argument("--verbose", "-v", action="store_true", help="print every task's outcome")
    common_options(plans)
    plans.set_defaults(func=_cmd_plans)

    report = sub.add_parser("report", help="summarize metrics.json files under a folder (e.g. compose runs)")
    report.add_argument("runs")
    report.add_argument("--out", help="where to write results.csv/summary.md/comparison.png (default: runs)")
    report.set_defaults(func=_cmd_report)


def _add_bench_compose(sub: Subparsers) -> None:
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


def _add_plans(sub: Subparsers) -> None:
    plans = sub.add_parser(
        "bench-plans", help="how often a model-written plan parses and validates: free text against the schema"
    )
    plans.add_argument("--tasks", default="tasks", help=TASKS_HELP)
    plans.add_argument("--limit", type=int, default=0, help="use only the first N questions")
    plans.add_argument("--out", default="bench/plans-validity")
    common_options(plans)
    plans.set_defaults(func=_cmd_bench_plans)
    grammar = sub.add_parser(
        "bench-grammar", help="output held to a schema: the grammar in the sampler chain against draw-first"
    )
    grammar.add_argument("--repeat", type=int, default=3, help="completions per case and way (medians)")
    grammar.add_argument("--out", default="bench/grammar")
    grammar.set_defaults(func=_cmd_bench_grammar)


def _cmd_bench_grammar(args: argparse.Namespace) -> int:
    from ..bench.grammar import run_grammar_bench

    # MODEL_THREADS as serve-model takes it: two llama.cpp threads beside another server's spin
    # against it at their barriers on a two-core machine
    threads = settings_from(args).model_threads
    rows = run_grammar_bench(Path(args.out), args.repeat, threads=threads, progress=console.print)
    table = Table(title="held output: llama-cpp-python's grammar in the chain against the bundled server's draw-first")
    for col in rows[0]:
        table.add_column(col, justify="left" if col == "case" else "right")
    for row in rows:
        table.add_row(*(str(v) for v in row.values()))
    console.print(table)
    console.print(f"wrote {args.out}/grammar.json")
    return 0


def _add_overhead(sub: Subparsers) -> None:
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


def _add_load(sub: Subparsers) -> None:
    flood = sub.add_parser(
        "bench-flood", help="one agent floods the relay with good and bad frames while the others work"
    )
    flood.add_argument("--task", default="tasks/solar-farm", help="the task the honest agents answer")
    flood.add_argument("--seconds", type=float, default=10.0, help="how long the flood lasts (default 10)")
    flood.add_argument("--out", default="bench/flood")
    common_options(flood)
    flood.set_defaults(func=_cmd_bench_flood)

    conc = sub.add_parser(
        "bench-concurrency", help="runs per minute at each MAX_CONCURRENT_RUNS, side by side"
    )
    conc.add_argument("--levels", default="1,2,3", help="MAX_CONCURRENT_RUNS values (default 1,2,3)")
    conc.add_argument("--runs", type=int, default=6, help="runs submitted at once per level (default 6)")
    conc.add_argument("--tasks", default="tasks", help=TASKS_HELP)
    conc.add_argument("--out", default="bench")
    common_options(conc)
    conc.set_defaults(func=_cmd_bench_concurrency)
