"""``gaiamesh bench-plans``: how often a plan the model writes parses and validates, written as
free text (parsed from the first JSON object) and held to the Plan schema, side by side on the
same questions and the same model. Answers are not run: this measures the plans alone.

Writes ``plan_validity.json`` (every plan: mode, question, parsed, valid, reasons, tokens,
seconds) and ``plan_validity.md`` (the table)."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress

from ...models.llm import LLMClient
from ...orchestrated.orchestrator import BUNDLED_TEMPLATES, DEFAULT_TEMPLATE, plan_writer, templates
from ...orchestrated.plan_tools import PLAN_TOOLS
from ...orchestrated.planner import PlanManager
from ...tasks import Task
from ...tools.tool import ToolContext

console = Console()
MODES = ("free", "schema")


async def measure(llm: LLMClient, tasks: list[Task]) -> list[dict[str, Any]]:
    """Every question's plan in both modes, the modes taking turns question by question."""
    rows: list[dict[str, Any]] = []
    ctx = ToolContext(llm=llm)
    usage, write = ctx.usage, plan_writer(ctx)
    managers = {m: PlanManager(PLAN_TOOLS, templates(BUNDLED_TEMPLATES), DEFAULT_TEMPLATE, write, schema=m == "schema")
                for m in MODES}  # fmt: skip
    with Progress(console=console, transient=True) as progress:
        bar = progress.add_task("plans", total=len(tasks) * len(MODES))
        for task in tasks:
            for mode, manager in managers.items():
                before, started = usage.tokens, time.perf_counter()
                got = await manager.write_plan(task.question)
                rows.append({"mode": mode, "task_id": task.task_id, "question": task.question, "parsed": got.parsed,
                             "valid": got.plan is not None, "reasons": got.reasons[:5], "tokens": usage.tokens - before,
                             "seconds": round(time.perf_counter() - started, 2), "text": got.text[:1500]})  # fmt: skip
                progress.advance(bar)
    return rows


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    table = []
    for mode in MODES:
        mine = [r for r in rows if r["mode"] == mode]
        n = len(mine) or 1
        reasons = Counter(r["reasons"][0].split(":")[0] for r in mine if r["reasons"])
        table.append({"mode": mode, "plans": len(mine), "parsed": sum(r["parsed"] for r in mine),
                      "valid": sum(r["valid"] for r in mine), "valid_rate": round(sum(r["valid"] for r in mine) / n, 3),
                      "tokens_mean": round(sum(r["tokens"] for r in mine) / n, 1),
                      "seconds_mean": round(sum(r["seconds"] for r in mine) / n, 2),
                      "first_reasons": dict(reasons.most_common(3))})  # fmt: skip
    return table


def write_results(rows: list[dict[str, Any]], out: Path, header: str) -> list[dict[str, Any]]:
    out.mkdir(parents=True, exist_ok=True)
    table = summarize(rows)
    (out / "plan_validity.json").write_text(json.dumps({"summary": table, "plans": rows}, indent=2))
    lines = [f"# Model-written plans: free text against the Plan schema\n\n{header}\n",
             "| mode | plans | parsed | valid | valid rate | tokens (mean) | seconds (mean) | most frequent first reason |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in table:
        why = "; ".join(f"{k} ({v})" for k, v in r["first_reasons"].items()) or "-"
        lines.append(f"| {r['mode']} | {r['plans']} | {r['parsed']} | {r['valid']} | {r['valid_rate']} | "
                     f"{r['tokens_mean']} | {r['seconds_mean']} | {why} |")  # fmt: skip
    (out / "plan_validity.md").write_text("\n".join(lines) + "\n")
    console.print("\n".join(lines))
    return table
