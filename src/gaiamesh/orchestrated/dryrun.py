"""``gaiamesh plans``: the orchestrated strategy's plans, run in-process over task folders.

The same planner, templates, executor, dispatcher, workers and model as a real run, with the
relay left out: each sub-task goes straight to the worker function of its role, and the
workers' readings ask the real model. A plan that hands the question to the pipeline
(``answer_question``) stops there and is reported as ``pipeline``, not scored as an answer,
which keeps a batch of a few hundred questions to minutes: a change to the templates or the
readings can be checked against the task sets before `gaiamesh bench` measures it (real
frames, real time).
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..mesh.frames import DocInitPacket, SubTaskPacket, chunk_document
from ..mesh.payloads import DocInit, ErrorDetails, SubTask, SubTaskResult
from ..models.llm import LLMClient
from ..settings import ToolSettings
from ..tasks import Task
from ..tasks.answers import exact_match
from ..tools.tool import ToolContext
from . import workers
from .journal import Journal, WorkingContext
from .orchestrator import BUNDLED_TEMPLATES, DEFAULT_TEMPLATE, dispatcher, made_by, plan_writer, templates
from .plan_tools import PLAN_TOOLS
from .planner import PlanManager
from .task import run_task

PIPELINE_TOOL = "answer_question"


@dataclass(frozen=True)
class DryRun:
    """One task's outcome: ``answered`` (scored), ``pipeline`` (left to the model) or ``failed``."""

    task_id: str
    question: str
    answer: str
    outcome: str
    prediction: str
    exact_match: int
    plan: str
    revisions: int
    tokens: int  # the model's tokens for the plan and the readings (the server's counts)
    made_by: dict[str, str]  # who made each decision of the answering plan (see orchestrator.made_by)


async def dry_run(task: Task, settings: ToolSettings, llm: LLMClient, schemas: bool = False) -> DryRun:
    """Plan and execute ``task``'s question with the orchestrated strategy, in-process: the
    orchestrator's own dispatcher, with each sub-task handed straight to its worker; the model
    writes plans where ``MODEL_PLANS`` says so (held to the Plan schema with ``schemas``)."""
    doc = DocInitPacket(run_id="dryrun", src="network", seq=0, question=task.question,
                        payload=DocInit(chunks=chunk_document(task.doc)))  # fmt: skip
    left_to_pipeline = False
    with tempfile.TemporaryDirectory() as scratch:
        ctx = ToolContext(
            llm=llm, doc=doc.payload, question=task.question, workspace=Path(scratch), settings=settings,
            schemas=schemas,
        )  # fmt: skip

        async def ask(sub: SubTask) -> SubTaskResult:
            nonlocal left_to_pipeline
            if sub.tool_name == PIPELINE_TOOL:
                left_to_pipeline = True
                return SubTaskResult(
                    sub_task_id=sub.sub_task_id, parent_task_id=sub.parent_task_id,
                    worker_agent_role=sub.assigned_agent_role, status="FAILED",
                    error_details=ErrorDetails(message="the pipeline needs the model", type="DryRun"),
                )  # fmt: skip
            packet = SubTaskPacket(run_id=doc.run_id, src="orchestrator", seq=0, payload=sub)
            return await workers.worker(sub.assigned_agent_role)(ctx, packet)

        ctx.ask = ask
        writer = plan_writer(ctx) if settings.model_plans else None
        manager = PlanManager(PLAN_TOOLS, templates(settings.templates_dir or BUNDLED_TEMPLATES), DEFAULT_TEMPLATE,
                              writer, schema=schemas)  # fmt: skip
        journal = Journal(Path(scratch) / "journal.jsonl")
        outcome = await run_task(
            task.question, manager, dispatcher(ctx, doc), journal, WorkingContext(task.question), settings.max_revisions
        )
    if outcome.status == "COMPLETED":
        kind, prediction = "answered", outcome.answer
    else:
        kind, prediction = ("pipeline" if left_to_pipeline else "failed"), ""
    return DryRun(
        task.task_id, task.question, task.answer, kind, prediction,
        exact_match(prediction, list(task.golds)) if prediction else 0,
        outcome.plan.source if outcome.plan else "", outcome.revisions, ctx.usage.tokens,
        dict(made_by(outcome)) if kind == "answered" else {},
    )  # fmt: skip


def summarize(results: dict[str, list[DryRun]]) -> list[dict[str, Any]]:
    """Per task set: tasks, exact matches, EM, and how many were left to the pipeline."""
    rows = []
    for name, runs in results.items():
        hits = sum(r.exact_match for r in runs)
        rows.append({
            "set": name, "tasks": len(runs), "exact": hits, "em": round(hits / len(runs), 3) if runs else 0.0,
            "pipeline": sum(r.outcome == "pipeline" for r in runs), "failed": sum(r.outcome == "failed" for r in runs),
            "tokens": sorted(r.tokens for r in runs)[len(runs) // 2] if runs else 0,
        })  # fmt: skip
    return rows


def write_results(results: dict[str, list[DryRun]], path: Path) -> None:
    """``path``: the summary and every task's outcome, as JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"summary": summarize(results), "tasks": {k: [asdict(r) for r in v] for k, v in results.items()}}
    path.write_text(json.dumps(body, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
