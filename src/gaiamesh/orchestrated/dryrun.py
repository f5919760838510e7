"""``gaiamesh plans``: the orchestrated strategy's plans, run in-process over task folders.

The same planner, templates, executor and worker tools as a real run, with the relay and the
model left out: each step calls its worker's handler directly. A plan that hands the question
to the pipeline (``answer_question``, which needs the model) stops there and is reported as
``pipeline``, not scored as an answer. A batch of a few hundred questions takes seconds, so a
change to the templates, the question forms or the readings can be checked against every task
set at once; `gaiamesh bench` remains the measure (real frames, real model, real time).
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..frames import DocInit, chunk_document
from ..llm import LLMUsage
from ..scoring import exact_match
from ..tasks import Task
from ..tools.registry import ToolContext
from . import workers
from .catalog import TOOLS
from .journal import Journal, WorkingContext
from .orchestrator import BUNDLED_TEMPLATES, DEFAULT_TEMPLATE, templates
from .plan import Step, StepOutput
from .planner import PlanManager
from .task import run_task

PIPELINE_TOOL = "answer_question"


class _NoModel:
    """Stands where the model client would be: the dry run never calls the model."""

    async def complete(self, *_args: Any, **_kwargs: Any) -> str:
        raise RuntimeError("the dry run does not call the model")


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


async def dry_run(task: Task, max_revisions: int = 2, templates_dir: Path | None = None) -> DryRun:
    """Plan and execute ``task``'s question with the orchestrated strategy, in-process."""
    ctx = ToolContext(
        llm=_NoModel(),  # type: ignore[arg-type]
        usage=LLMUsage(),
        doc=DocInit(chunks=chunk_document(task.doc)),
        question=task.question,
    )
    left_to_pipeline = False

    async def dispatch(step: Step, resolved: dict[str, Any]) -> StepOutput:
        nonlocal left_to_pipeline
        if step.tool_name == PIPELINE_TOOL:
            left_to_pipeline = True
            return StepOutput("FAILED", error="DryRun: the pipeline needs the model")
        model, handler = workers.HANDLERS[step.assigned_agent_role][step.tool_name]
        try:
            data, value, evidence = await handler(ctx, model.model_validate(resolved))
        except ValidationError as exc:
            return StepOutput("FAILED", error=f"BadInput: {exc.errors()[0]['msg']}")
        except (LookupError, ValueError) as exc:  # CalculatorError is a ValueError
            return StepOutput("FAILED", error=f"NotFound: {exc}")
        return StepOutput("COMPLETED", data, value, evidence=evidence)

    manager = PlanManager(TOOLS, templates(templates_dir or BUNDLED_TEMPLATES), DEFAULT_TEMPLATE)
    with tempfile.TemporaryDirectory() as scratch:
        journal = Journal(Path(scratch) / "journal.jsonl")
        outcome = await run_task(task.question, manager, dispatch, journal, WorkingContext(task.question), max_revisions)
    golds = list(task.golds)
    if outcome.status == "COMPLETED":
        kind, prediction = "answered", outcome.answer
    else:
        kind, prediction = ("pipeline" if left_to_pipeline else "failed"), ""
    return DryRun(
        task.task_id, task.question, task.answer, kind, prediction,
        exact_match(prediction, golds) if prediction else 0,
        outcome.plan.source if outcome.plan else "", outcome.revisions,
    )  # fmt: skip


def summarize(results: dict[str, list[DryRun]]) -> list[dict[str, Any]]:
    """Per task set: tasks, exact matches, EM, and how many were left to the pipeline."""
    rows = []
    for name, runs in results.items():
        hits = sum(r.exact_match for r in runs)
        rows.append({
            "set": name, "tasks": len(runs), "exact": hits, "em": round(hits / len(runs), 3) if runs else 0.0,
            "pipeline": sum(r.outcome == "pipeline" for r in runs), "failed": sum(r.outcome == "failed" for r in runs),
        })  # fmt: skip
    return rows


def write_results(results: dict[str, list[DryRun]], path: Path) -> None:
    """``path``: the summary and every task's outcome, as JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"summary": summarize(results), "tasks": {k: [asdict(r) for r in v] for k, v in results.items()}}
    path.write_text(json.dumps(body, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
