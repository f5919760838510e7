"""The ``gaiamesh`` command: run, baseline, and the service entry points (agent, relay, serve-model)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import re
import signal
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from .errors import ConfigError, GaiameshError, ModelUnreachable, RunError, TaskError, exit_code, label
from .evaluation.metrics import RunMetrics
from .settings import STRATEGY_TOOLS, Settings, load_settings
from .tasks import load_task

console = Console()
errors = Console(stderr=True, soft_wrap=True)  # error messages: on stderr, never folded
if not console.is_terminal:
    console.width = 120  # compose logs and pipes: keep the summary table readable


SUMMARY_KEYS = [
    "status", "error", "task_id", "question", "answer", "prediction", "quality_score", "exact_match",
    "rouge_l", "gaia_match", "protocol", "routing", "bytes_tx", "bytes_rx", "pkt_cnt", "header_overhead",
    "rejected_cnt", "token_sum", "elapsed_ms", "llm_ms", "network_share",
]  # fmt: skip


def summary_table(metrics: RunMetrics, title: str = "run summary") -> Table:
    """The end-of-run table: status, answer, quality and traffic counters."""
    table = Table(title=title, show_header=True, header_style="bold")
    table.add_column("metric")
    table.add_column("value", overflow="fold")
    for key in SUMMARY_KEYS:
        value = getattr(metrics, key)
        if key == "quality_score" and value is None:
            table.add_row(key, "not scored (no gold answer)")
        elif value is not None:
            table.add_row(key, f"{value:.4f}" if isinstance(value, float) else str(value))
    return table


def _settings(args: argparse.Namespace) -> Settings:
    overrides = {k: v for k, v in vars(args).items() if k in Settings.model_fields and v is not None}
    return load_settings(**overrides)


def _cmd_run(args: argparse.Namespace) -> int:
    from .runner import run_local, write_failure

    settings = _settings(args)
    task = load_task(args.task)
    out = Path(args.out or f"runs/{task.task_id}")
    try:
        metrics = run_local(settings, task, out, args.base_port)
    except RunError as exc:  # metrics.json says how the run ended; main() says why, and exits 1
        write_failure(out, settings, task, "model_unreachable" if isinstance(exc, ModelUnreachable) else "failed", str(exc))
        raise
    console.print(summary_table(metrics, f"gaiamesh run · {task.task_id}"))
    console.print(f"results: {out}/metrics.json, {out}/run_artifacts.tar.gz")
    if metrics.status != "ok":
        errors.print(f"[red]run ended with status {metrics.status}: {metrics.error}[/red]")
        return 1
    return 0


def _cmd_baseline(args: argparse.Namespace) -> int:
    from .bench.baseline import run_baseline
    from .runner import ProcessGroup, model_server

    settings = _settings(args)
    task = load_task(args.task)
    out = Path(args.out or f"runs/{task.task_id}-baseline")
    group = ProcessGroup(out / "logs")
    try:
        with model_server(settings, group):
            metrics = asyncio.run(run_baseline(settings, task, out))
    finally:
        group.stop_all()
    console.print(summary_table(metrics, f"gaiamesh baseline · {task.task_id}"))
    return 0 if metrics.status == "ok" else 1


async def _until_signalled(coro_factory: Any) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await coro_factory(stop)


def _cmd_agent(args: argparse.Namespace) -> int:
    from .mesh.agent import MeshAgent
    from .toolbox import get_tool

    settings = _settings(args)
    agent = MeshAgent(settings, get_tool(settings.tool))
    asyncio.run(_until_signalled(agent.serve))
    return 0


def _cmd_relay(args: argparse.Namespace) -> int:
    from .mesh.relay import MeshNetwork

    settings = _settings(args)
    task = load_task(settings.task, settings.task_label)
    net = MeshNetwork(settings, task, Path(settings.out_dir))
    metrics = asyncio.run(net.run())
    if not args.no_summary:
        console.print(summary_table(metrics, f"gaiamesh · {task.task_id} · {settings.protocol}"))
    return 0 if metrics.status == "ok" else 1


def _cmd_serve_model(args: argparse.Namespace) -> int:
    from .models.modelserver import serve

    settings = _settings(args)
    serve(
        args.host, args.port, settings.model, settings.model_path, settings.model_ctx, settings.model_threads
    )
    return 0


def _cmd_serve_web(args: argparse.Namespace) -> int:
    import uvicorn

    from .web.app import create_app

    console.print(f"offline web on http://{args.host}:{args.port} (pages from {args.tasks_dir} and the bundled ones)")
    uvicorn.run(create_app(Path(args.tasks_dir)), host=args.host, port=args.port, log_level="warning")
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    from .service import serve

    settings = _settings(args)
    serve(settings)
    return 0


def _cmd_submit(args: argparse.Namespace) -> int:
    from .service.client import save_artifacts, submit
    from .service.models import RunRequest

    settings = _settings(args)
    host = "127.0.0.1" if settings.service_host in ("0.0.0.0", "::", "") else settings.service_host  # a bind-all address
    url = (args.url or f"http://{host}:{settings.service_port}").rstrip("/")
    if not settings.access_key:
        raise ConfigError("GAIAMESH_ACCESS_KEY is not set (it is in .env after make setup)")
    source = _submit_source(args, settings)
    if args.question and source.get("question") not in (None, args.question):
        source.pop("answers", None)  # the folder's gold answers its own question, not this one
    options = {"question": args.question, "answer": args.answer, "protocol": args.protocol, "routing": args.routing,
               "strategy": args.strategy, "run_timeout": args.run_timeout}  # fmt: skip
    request = RunRequest.model_validate(source | {k: v for k, v in options.items() if v is not None})
    run, metrics = submit(url, settings.access_key, request, progress=console.print)
    if args.out and metrics is not None:
        path = save_artifacts(url, settings.access_key, run.id, Path(args.out))
        metrics.write(Path(args.out) / "metrics.json")
        console.print(f"saved {path} and {Path(args.out) / 'metrics.json'}")
    if metrics is None:
        errors.print(f"[red]run {run.id} ended {run.state.value} without metrics: {run.error}[/red]")
        return 1
    console.print(summary_table(metrics, f"gaiamesh · {run.task_id} · {metrics.protocol}"))
    console.print(
        f"run {run.id}: metrics.json and run_artifacts.tar.gz in runs/{run.id}/ under the service's OUT_DIR; "
        f"API {url}/openapi.json"
    )
    return 0 if metrics.status == "ok" else 1


def _submit_source(args: argparse.Namespace, settings: Settings) -> dict[str, Any]:
    """What ``submit`` asks the service to run: a text file (``--document``), a task folder of
    this machine (``--task PATH``, or ``TASK``, the folder ``make up`` mounts) sent as its
    document, question and gold answers, or the name of a task bundled with the service."""
    if args.document:
        path = Path(args.document)
        if not path.is_file():
            raise TaskError(f"--document {path}: no such file")
        try:
            return {"document": path.read_text(encoding="utf-8"), "name": _name(path.stem)}
        except UnicodeDecodeError as exc:
            raise TaskError(f"--document {path} is not UTF-8 text ({exc.reason})") from exc
    folder = Path(args.task) if args.task else settings.task
    if folder.is_dir():
        task = load_task(folder, None if args.task else settings.task_label)
        return {"document": task.doc, "question": task.question, "name": _name(task.task_id),
                "answers": list(task.golds) or None}  # fmt: skip
    if args.task and ("/" in args.task or args.task.startswith(".")):
        raise TaskError(f"--task {args.task}: no such task folder")
    return {"task": args.task or folder.name}  # a bundled task's name


def _name(text: str) -> str | None:
    """A run name from a file or folder name (the characters a task id may have)."""
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-._")[:100]
    return cleaned or None


def _cmd_bench_concurrency(args: argparse.Namespace) -> int:
    from .bench.concurrency import run_concurrency_bench
    from .tasks import discover_tasks

    settings = _settings(args)
    levels = [int(n) for n in args.levels.split(",") if n.strip()]
    names = [t.path.name for t in discover_tasks(args.tasks)]
    tasks = [names[i % len(names)] for i in range(args.runs)]
    run_concurrency_bench(settings.model_copy(update={"tasks_dir": Path(args.tasks)}), levels, tasks, Path(args.out))
    console.print(f"wrote {args.out}/concurrency.json and concurrency.md")
    return 0


def _cmd_bench_failstorm(args: argparse.Namespace) -> int:
    from .bench.failstorm import run_failstorm
    from .tasks import discover_tasks

    settings = _settings(args)
    tasks = discover_tasks(args.tasks)[: args.limit or None]
    if not tasks:
        raise TaskError(f"no task folders under {args.tasks}")
    if args.compose:
        from .bench.compose_storm import run_compose_failstorm

        if not settings.access_key:
            raise ConfigError("GAIAMESH_ACCESS_KEY is empty (make setup writes it into .env)")
        result = run_compose_failstorm(
            args.compose, args.url, settings.access_key, Path(args.results), tasks, Path(args.out), args.kill,
            args.every, args.seed, args.grace,
        )  # fmt: skip
    else:
        result = run_failstorm(settings, tasks, Path(args.out), args.kill, args.every, args.down, args.seed, args.grace)
    table = Table(title="fail-storm")
    table.add_column("measure")
    table.add_column("value")
    for key, value in result["summary"].items():
        table.add_row(key, str(value))
    table.add_row("audits", "all ok" if result["audits_ok"] else "MISMATCH")
    console.print(table)
    console.print(f"wrote {args.out}/failstorm.json, failstorm.md, failstorm.png")
    return 0 if result["audits_ok"] else 1


def _cmd_bench_flood(args: argparse.Namespace) -> int:
    from .bench.flood import run_flood

    task = load_task(Path(args.task))
    result = run_flood(_settings(args), task, Path(args.out), args.seconds)
    console.print(f"wrote {args.out}/flood.json, flood.md")
    flood = result["flood"]
    ok = flood["audit_ok"] and flood["status"] == "ok" and flood["logged_from_flooder"] == flood["sent_total"]
    return 0 if ok else 1


def _cmd_bench(args: argparse.Namespace) -> int:
    from .bench.compare import run_bench
    from .mesh.protocols import available
    from .tasks import discover_tasks

    settings = _settings(args)
    protocols = [p.strip() for p in args.protocols.split(",") if p.strip()]
    unknown = [p for p in protocols if p not in available()]
    if unknown:
        raise ConfigError(f"unknown protocol(s) {', '.join(unknown)}; available: {', '.join(available())}")
    if args.repeat < 1:
        raise ConfigError("--repeat must be at least 1")
    tasks = discover_tasks(args.tasks)
    strategies = [s.strip() for s in (args.strategies or settings.strategy).split(",") if s.strip()]
    # --ablate triple,extract: one variant per item ("none" = every stage); a+b leaves out both
    ablations = [("" if a.strip() == "none" else a.strip().replace("+", ",")) for a in (args.ablate or "").split(",")
                 if a.strip()] or None  # fmt: skip
    unknown = [s for s in strategies if s not in STRATEGY_TOOLS]
    if unknown:
        raise ConfigError(f"unknown strategy {unknown[0]!r}; choose from {', '.join(STRATEGY_TOOLS)}")
    rows = run_bench(
        settings, tasks, protocols, args.repeat, Path(args.out), args.base_port, args.baseline, strategies,
        ablations,
    )  # fmt: skip
    console.print(f"wrote {args.out}/results.csv, summary.md, comparison.png ({len(rows)} runs)")
    return 0


def _cmd_plans(args: argparse.Namespace) -> int:
    from rich.progress import Progress

    from .orchestrated.dryrun import dry_run, summarize, write_results
    from .tasks import discover_tasks

    settings = _settings(args)
    sets = {folder: discover_tasks(folder) for folder in args.tasks}
    results: dict[str, list[Any]] = {}
    with Progress(console=console, transient=True) as progress:
        bar = progress.add_task("plans", total=sum(len(t) for t in sets.values()))
        for folder, tasks in sets.items():
            results[folder] = []
            for task in tasks:
                results[folder].append(asyncio.run(dry_run(task, settings)))
                progress.advance(bar)
    if args.verbose:
        for folder, runs in results.items():
            for r in runs:
                mark = "[green]ok[/green]" if r.exact_match else "[red]--[/red]"
                console.print(f"{mark} {folder}/{r.task_id}: {r.outcome} {r.prediction!r} (gold {r.answer!r}; {r.plan})")
    table = Table(title="orchestrated plans, dry run (no model: questions left to the pipeline are not scored)")
    for col in ("set", "tasks", "exact", "em", "pipeline", "failed"):
        table.add_column(col, justify="left" if col == "set" else "right")
    rows = summarize(results)
    for row in rows:
        table.add_row(*(str(row[c]) for c in ("set", "tasks", "exact", "em", "pipeline", "failed")))
    console.print(table)
    write_results(results, Path(args.out))
    console.print(f"wrote {args.out}")
    return 0


def _cmd_bench_overhead(args: argparse.Namespace) -> int:
    from .bench.overhead import run_overhead
    from .models.modelserver import bundled_model_path
    from .runner import ProcessGroup, model_server

    settings = _settings(args)
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
    from .bench.compare import collect, write_reports

    rows = collect(Path(args.runs))
    if not rows:
        errors.print(f"[red]no metrics.json under {args.runs}[/red]")
        return 1
    write_reports(rows, Path(args.out or args.runs))
    return 0


def _cmd_tasks_import(args: argparse.Namespace) -> int:
    from .tasks.importers import import_tasks

    report = import_tasks(args.format, Path(args.file), Path(args.out_dir), args.limit)
    console.print(f"wrote {len(report.written)} task folders under {args.out_dir}")
    for why, n in sorted(report.skipped.items()):
        console.print(f"skipped {n}: {why}")
    return 0 if report.written else 1


def _cmd_audit(args: argparse.Namespace) -> int:
    from .evaluation.metrics import audit

    run_dir = Path(args.run_dir)
    if not (run_dir / "metrics.json").is_file() or not (run_dir / "frames.jsonl").is_file():
        errors.print(f"[red]audit:[/red] {run_dir} needs metrics.json and frames.jsonl")
        return 2
    rows = audit(run_dir)
    table = Table(title=f"audit · {run_dir}")
    for col in ("counter", "metrics.json", "frames.jsonl", ""):
        table.add_column(col)
    for name, reported, recomputed in rows:
        table.add_row(name, str(reported), str(recomputed), "ok" if reported == recomputed else "MISMATCH")
    console.print(table)
    bad = [name for name, reported, recomputed in rows if reported != recomputed]
    if bad:
        errors.print(f"[red]audit: {', '.join(bad)} disagree with the frame log[/red]")
        return 1
    return 0


def _cmd_keygen(args: argparse.Namespace) -> int:
    from .mesh.protocols import generate_keys

    settings = _settings(args)
    nodes = args.nodes.split(",") if args.nodes else ["network", *(a.node_id for a in settings.agent_specs())]
    keys_dir = Path(args.keys_dir or settings.keys_dir)
    for node in nodes:
        stale = keys_dir / f"{node}.pem"
        if stale.is_dir() and not any(stale.iterdir()):
            stale.rmdir()  # left by a bind mount of a key that did not exist yet
    if (keys_dir / "public.json").is_dir():
        (keys_dir / "public.json").rmdir()
    if (
        not args.force
        and (keys_dir / "public.json").is_file()
        and all((keys_dir / f"{n}.pem").is_file() for n in nodes)
    ):
        console.print(f"keys: {keys_dir} already holds keys for {', '.join(nodes)}")
        return 0
    generate_keys(keys_dir, nodes)
    console.print(f"keys: wrote Ed25519 key pairs for {', '.join(nodes)} to {keys_dir}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gaiamesh", description="Benchmark harness for multi-agent LLM meshes")
    sub = p.add_subparsers(dest="command", required=True)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--protocol", help="wire protocol (PROTOCOL)")
        sp.add_argument("--strategy", help="pipeline | orchestrated: the team that answers (STRATEGY)")
        sp.add_argument("--routing", help="broadcast | topic | share (ROUTING)")
        sp.add_argument("--model", help="model name on the model server (MODEL)")
        sp.add_argument("--ollama-host", dest="ollama_host", help="model server URL (OLLAMA_HOST)")
        sp.add_argument("--run-timeout", dest="run_timeout", type=float, help="seconds (RUN_TIMEOUT)")
        sp.add_argument("--workspaces", dest="workspace_root", help="workspace root (WORKSPACE_ROOT)")

    run = sub.add_parser("run", help="run the whole mesh locally on one task")
    run.add_argument("task", help="task folder (doc.txt + ground_truth.json)")
    run.add_argument("--out", help="output folder (default runs/<task id>)")
    run.add_argument("--base-port", type=int, default=9000, help="first agent port (default 9000)")
    run.add_argument(
        "--replay-plan", dest="replay_plan", help="orchestrated: run the plan saved in this task_state.json again"
    )
    common(run)
    run.set_defaults(func=_cmd_run)

    base = sub.add_parser("baseline", help="one direct model call on the task, scored the same way")
    base.add_argument("task")
    base.add_argument("--out")
    common(base)
    base.set_defaults(func=_cmd_baseline)

    agent = sub.add_parser("agent", help="serve one agent (NODE_ID, TOOL, PORT from the environment)")
    common(agent)
    agent.set_defaults(func=_cmd_agent)

    relay = sub.add_parser("relay", help="run the relay once (TASK, AGENTS, OUT_DIR from the environment)")
    relay.add_argument(
        "--no-summary", action="store_true", help="skip the summary table (the caller prints it)"
    )
    common(relay)
    relay.set_defaults(func=_cmd_relay)

    bench = sub.add_parser("bench", help="every task under every protocol, repeated: CSV, summary, plot")
    bench.add_argument("--tasks", default="tasks", help="folder of task folders (default tasks/)")
    bench.add_argument("--protocols", default="json,binary,compressed,signed,a2a")
    bench.add_argument("--strategies", help="comma-separated: pipeline,orchestrated (default: STRATEGY)")
    bench.add_argument("--ablate", help="compare the pipeline with stages left out, e.g. none,triple,extract "
                       "(a stage left out hands its input on unchanged; a+b leaves out both)")
    bench.add_argument("--repeat", type=int, default=3)
    bench.add_argument("--out", default="bench")
    bench.add_argument("--base-port", type=int, default=9000)
    bench.add_argument("--baseline", action="store_true", help="also score one direct model call per task")
    common(bench)
    bench.set_defaults(func=_cmd_bench)

    plans = sub.add_parser("plans", help="orchestrated: run the plans in-process over task sets, without the model")
    plans.add_argument("tasks", nargs="+", help="task folders, folders of them, or .jsonl files")
    plans.add_argument("--out", default="bench/plans.json", help="results file (JSON)")
    plans.add_argument("--verbose", "-v", action="store_true", help="print every task's outcome")
    common(plans)
    plans.set_defaults(func=_cmd_plans)

    over = sub.add_parser("bench-overhead", help="relay cost per frame and model server speed, side by side")
    over.add_argument("--frames", type=int, default=2000, help="round trips per path (default 2000)")
    over.add_argument("--fanout-frames", type=int, default=5000, help="frames per fan-out measurement")
    over.add_argument("--rounds", type=int, default=5, help="rounds over every path (medians; default 5)")
    over.add_argument("--fanout", default="4,16", help="subscriber counts for fan-out (default 4,16)")
    over.add_argument("--relays-only", action="store_true", help="skip the model server comparison")
    over.add_argument("--tokens", type=int, default=128, help="tokens generated per model sample")
    over.add_argument("--repeat", type=int, default=3, help="model samples per side")
    over.add_argument("--out", default="bench")
    common(over)
    over.set_defaults(func=_cmd_bench_overhead)

    storm = sub.add_parser("bench-failstorm", help="agents killed and restarted during a batch: recovery, retention")
    storm.add_argument("--tasks", default="tasks", help="folder of task folders (default tasks/)")
    storm.add_argument("--limit", type=int, default=0, help="use only the first N tasks")
    storm.add_argument("--kill", type=int, default=3, help="agents killed each time (default 3 of 8)")
    storm.add_argument("--every", type=float, default=15.0, help="seconds between kills (default 15)")
    storm.add_argument("--down", type=float, default=3.0, help="seconds before a killed agent restarts")
    storm.add_argument("--seed", type=int, default=1, help="which agents die (random, seeded)")
    storm.add_argument("--grace", type=float, default=10.0,
                       help="REJOIN_GRACE: seconds a run waits when all agents of a tool are down (default 10)")
    storm.add_argument("--compose", metavar="PROJECT", default="",
                       help="storm a running compose stack (--profile wide) of this project: SIGKILL, restart policy")
    storm.add_argument("--url", default="http://127.0.0.1:8080", help="with --compose: the network service")
    storm.add_argument("--results", default="results", help="with --compose: the host folder of RESULTS_DIR")
    storm.add_argument("--out", default="bench/failstorm")
    common(storm)
    storm.set_defaults(func=_cmd_bench_failstorm)

    flood = sub.add_parser("bench-flood", help="one agent floods the relay with good and bad frames while the others work")
    flood.add_argument("--task", default="tasks/solar-farm", help="the task the honest agents answer")
    flood.add_argument("--seconds", type=float, default=10.0, help="how long the flood lasts (default 10)")
    flood.add_argument("--out", default="bench/flood")
    common(flood)
    flood.set_defaults(func=_cmd_bench_flood)

    conc = sub.add_parser("bench-concurrency", help="runs per minute at each MAX_CONCURRENT_RUNS, side by side")
    conc.add_argument("--levels", default="1,2,3", help="MAX_CONCURRENT_RUNS values (default 1,2,3)")
    conc.add_argument("--runs", type=int, default=6, help="runs submitted at once per level (default 6)")
    conc.add_argument("--tasks", default="tasks", help="folder of task folders (default tasks/)")
    conc.add_argument("--out", default="bench")
    common(conc)
    conc.set_defaults(func=_cmd_bench_concurrency)

    report = sub.add_parser("report", help="summarize metrics.json files under a folder (e.g. compose runs)")
    report.add_argument("runs")
    report.add_argument("--out", help="where to write results.csv/summary.md/comparison.png (default: runs)")
    report.set_defaults(func=_cmd_report)

    tasks = sub.add_parser("tasks", help="task folders: import public datasets")
    tasks_sub = tasks.add_subparsers(dest="tasks_command", required=True)
    imp = tasks_sub.add_parser("import", help="turn a SQuAD, HotpotQA, GAIA or JSONL file into task folders")
    imp.add_argument("--format", required=True, choices=["squad", "hotpotqa", "gaia", "jsonl"])
    imp.add_argument("--limit", type=int, default=0, help="write at most N tasks")
    imp.add_argument("file", help="the dataset file (GAIA: metadata.jsonl, attachments beside it)")
    imp.add_argument("out_dir", help="where the task folders go")
    imp.set_defaults(func=_cmd_tasks_import)

    aud = sub.add_parser("audit", help="recompute a run's counters from frames.jsonl and compare")
    aud.add_argument("run_dir", help="folder with metrics.json and frames.jsonl (e.g. results/)")
    aud.set_defaults(func=_cmd_audit)

    keygen = sub.add_parser("keygen", help="create Ed25519 key pairs for the signed protocol")
    keygen.add_argument("--keys-dir", help="output folder (KEYS_DIR, default keys/)")
    keygen.add_argument("--nodes", help="comma-separated node ids (default: network + the AGENTS ids)")
    keygen.add_argument("--force", action="store_true", help="replace existing keys")
    keygen.set_defaults(func=_cmd_keygen)

    api = sub.add_parser("serve", help="the network service: runs, sessions and live events over HTTP")
    api.add_argument("--service-host", dest="service_host", help="bind address (SERVICE_HOST, 127.0.0.1)")
    api.add_argument("--service-port", dest="service_port", type=int, help="port (SERVICE_PORT, 8080)")
    api.add_argument("--out", dest="out_dir", help="state and runs folder (OUT_DIR, results/)")
    common(api)
    api.set_defaults(func=_cmd_serve)

    sb = sub.add_parser("submit", help="start a run on a running network service and follow it live")
    sb.add_argument("--task", help="a task folder (doc.txt + ground_truth.json) or a bundled task's name "
                    "(default: TASK, the folder make up mounts)")  # fmt: skip
    sb.add_argument("--document", help="a text file to ask about instead of a task")
    sb.add_argument("--question", help="the question (needed with --document; replaces a task's)")
    sb.add_argument("--answer", help="the right answer, to score the run (without one it is not scored)")
    sb.add_argument("--url", help="the service (default http://SERVICE_HOST:SERVICE_PORT)")
    sb.add_argument("--out", help="also download the archive and metrics.json into this folder")
    sb.add_argument("--protocol", help="wire protocol (default: the service's PROTOCOL)")
    sb.add_argument("--strategy", choices=list(STRATEGY_TOOLS), help="the team that answers (default: STRATEGY)")
    sb.add_argument("--routing", help="broadcast | topic | share | auto (default: ROUTING)")
    sb.add_argument("--run-timeout", dest="run_timeout", type=float, help="seconds the run may take (default: RUN_TIMEOUT)")
    sb.set_defaults(func=_cmd_submit)

    srv = sub.add_parser("serve-model", help="serve the bundled model over the Ollama API")
    srv.add_argument("--host", default="127.0.0.1")
    srv.add_argument("--port", type=int, default=11434)
    srv.add_argument("--model", help="name to serve under (MODEL)")
    srv.set_defaults(func=_cmd_serve_model)

    web = sub.add_parser("serve-web", help="serve the offline web (pages and search) for the research worker")
    web.add_argument("--host", default="127.0.0.1")
    web.add_argument("--port", type=int, default=8090)
    web.add_argument("--tasks-dir", dest="tasks_dir", default="tasks", help="task documents to publish as pages")
    web.set_defaults(func=_cmd_serve_web)
    return p


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s", stream=sys.stderr
    )
    for noisy in ("httpx", "httpcore", "matplotlib", "absl", "websockets"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except GaiameshError as exc:  # each kind's words and exit code: gaiamesh.errors, in one place
        errors.print(f"[red]{label(exc)}:[/red] {exc}")
        return exit_code(exc)
    except ValidationError as exc:  # settings from the environment that pydantic refused
        errors.print(f"[red]bad configuration:[/red] {exc}")
        return 2
