"""The plans' and the held output's commands: ``plans`` (the orchestrator's plans in-process, no
relay), ``bench-plans`` (how often a model-written plan parses and validates) and
``bench-grammar`` (output held to a schema, two ways)."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from rich.table import Table

from .common import TASKS_HELP, Subparsers, common_options, console, settings_from


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


def _cmd_bench_plans(args: argparse.Namespace) -> int:
    from ..bench.model.plan_validity import measure, write_results
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


def _cmd_bench_grammar(args: argparse.Namespace) -> int:
    from ..bench.model.grammar import run_grammar_bench

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


def add_plans(sub: Subparsers) -> None:
    """``gaiamesh plans``."""
    plans = sub.add_parser(
        "plans", help="orchestrated: run the plans in-process over task sets, with the model and without the relay"
    )
    plans.add_argument("tasks", nargs="+", help="task folders, folders of them, or .jsonl files (FILE#SET: one set)")
    plans.add_argument("--out", default="bench/plans.json", help="results file (JSON)")
    plans.add_argument("--verbose", "-v", action="store_true", help="print every task's outcome")
    common_options(plans)
    plans.set_defaults(func=_cmd_plans)


def add_bench_plans(sub: Subparsers) -> None:
    """``gaiamesh bench-plans`` and ``bench-grammar``."""
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
