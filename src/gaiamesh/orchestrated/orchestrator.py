"""``orchestrator``: the agent that plans a task, hands its steps to workers and answers.

It receives ``doc_init`` like every agent, writes (or chooses) a plan, and carries it out
through the relay: each step becomes a ``subtask`` frame to a worker of the step's role, and
the worker's ``result`` frame comes back to it. Failures lead to revised plans (see
:mod:`.task`). Its workspace for the run holds ``journal.jsonl``, ``cwc.md`` and
``task_state.json``. The answer leaves as the usual ``final_answer``; a task that fails leaves
as an ``error`` packet whose message explains why.
"""

from __future__ import annotations

import itertools
from functools import cache
from pathlib import Path
from typing import Any

import httpx
from pydantic import ValidationError

from ..errors import ToolError
from ..mesh.frames import FINAL_ANSWER_TAG, DocInitPacket, PacketType
from ..mesh.payloads import FinalAnswer, Maker, SubTask
from ..pipeline.followup import resolve as resolve_followup
from ..settings import ToolSettings
from ..tools.tool import Tool, ToolContext
from .download import DownloadError, download
from .executor import Dispatch
from .files import Files, WorkspaceError
from .journal import Journal, WorkingContext, load_state, save_state
from .plan import PlanError, Step, StepOutput, validate_plan
from .plan_templates import Template, load_templates
from .plan_tools import ORCHESTRATOR, PLAN_TOOLS, Download, FileOperation
from .planner import PlanManager, WritePlan
from .task import TaskOutcome, run_task

BUNDLED_TEMPLATES = Path(__file__).parent / "templates"
DEFAULT_TEMPLATE = "ask_the_document"


class TaskFailed(ToolError):
    """The task failed after every revision; the message explains why."""


@cache
def templates(folder: Path) -> list[Template]:
    """The plan templates in ``folder``, loaded and validated once per process."""
    return load_templates(folder, PLAN_TOOLS)


async def run_own_tool(step: Step, resolved: dict[str, Any], ctx: ToolContext) -> StepOutput:
    """An orchestrator-level step (files, downloads): run here, not sent to a worker."""
    assert ctx.workspace is not None and ctx.settings is not None
    settings = ctx.settings
    files = Files(ctx.workspace / "files")
    try:
        inp = PLAN_TOOLS[(ORCHESTRATOR, step.tool_name)].input_model.model_validate(resolved)
        if isinstance(inp, FileOperation):
            if inp.operation == "read":
                return StepOutput("COMPLETED", files.read(inp.path), inp.path)
            if inp.operation == "list":
                return StepOutput("COMPLETED", "\n".join(files.list(inp.path)), inp.path)
            if inp.operation == "create_pdf_from_text":
                path = files.create_pdf_from_text(inp.path, inp.content, inp.title)
            else:
                path = getattr(files, inp.operation)(inp.path, inp.content)
            return StepOutput("COMPLETED", f"files/{path}", path, evidence=f"{inp.operation} {path}")
        assert isinstance(inp, Download)
        path, size = await download(
            inp.url, files, inp.path, settings.download_allowlist(), settings.download_max_bytes,
            settings.download_timeout,
        )  # fmt: skip
        return StepOutput("COMPLETED", f"files/{path}", size, evidence=f"downloaded {inp.url} ({size} bytes)")
    except ValidationError as exc:
        first = exc.errors()[0]
        return StepOutput("FAILED", error=f"BadInput: {step.tool_name} input {'.'.join(map(str, first['loc']))}: {first['msg']}")
    except (WorkspaceError, DownloadError) as exc:
        return StepOutput("FAILED", error=f"{type(exc).__name__}: {exc}")
    except httpx.HTTPError as exc:
        return StepOutput("FAILED", error=f"DownloadError: {exc!r}")


def dispatcher(ctx: ToolContext, packet: DocInitPacket) -> Dispatch:
    """Carry out a step: the orchestrator's own tools here, any other through the relay to a
    worker of the step's role."""
    assert ctx.ask is not None and ctx.settings is not None
    ask, timeout = ctx.ask, ctx.settings.subtask_timeout
    numbers = itertools.count(1)

    async def dispatch(step: Step, resolved: dict[str, Any]) -> StepOutput:
        if step.assigned_agent_role == ORCHESTRATOR:
            return await run_own_tool(step, resolved, ctx)
        task = SubTask(
            sub_task_id=f"{packet.run_id}.{step.step_id}.{next(numbers)}",
            parent_task_id=packet.run_id,
            assigned_agent_role=step.assigned_agent_role,
            tool_name=step.tool_name,
            sub_task_input=resolved,
            context_summary=packet.question[:500],
        )
        try:
            result = await ask(task)
        except TimeoutError:
            return StepOutput("FAILED", error=f"Timeout: no result for {task.sub_task_id} within {timeout:.0f}s")
        if result.status == "COMPLETED":
            return StepOutput("COMPLETED", result.result_data, result.processed_result_data, evidence=result.evidence,
                              made_by=result.made_by)  # fmt: skip
        details = result.error_details
        kind = details.type if details and details.type else "Failed"
        return StepOutput("FAILED", error=f"{kind}: {details.message if details else 'no details'}")

    return dispatch


PLAN_TOKENS = 384  # a plan of three steps is about 200 tokens as JSON


def plan_writer(ctx: ToolContext) -> WritePlan:
    """How the orchestrator asks its model for a plan, counted in ``ctx.usage``
    (``gaiamesh bench-plans`` asks the same)."""

    async def write(prompt: str, schema: dict[str, Any] | None) -> str:
        # Held to a schema, the grammar ends the object: no stop string may cut it short.
        stop = () if schema is not None else ("\n\n", "\nQuestion:")
        return await ctx.llm.complete(prompt, ctx.usage, num_predict=PLAN_TOKENS, stop=stop, schema=schema)

    return write


async def run(ctx: ToolContext, packet: DocInitPacket) -> FinalAnswer:
    settings = ctx.settings
    assert settings is not None and ctx.workspace is not None
    question = resolve_followup(packet.question, packet.payload.history or [])
    ctx.question = question
    journal = Journal(ctx.workspace / "journal.jsonl")
    cwc = WorkingContext(question)

    manager = PlanManager(
        PLAN_TOOLS, templates(settings.templates_dir or BUNDLED_TEMPLATES), DEFAULT_TEMPLATE,
        plan_writer(ctx) if settings.model_plans else None, schema=ctx.schemas,
    )  # fmt: skip
    plan = None
    if settings.replay_plan is not None:
        saved, plan = load_state(settings.replay_plan)
        if plan is None:
            raise TaskFailed(f"{settings.replay_plan} holds no plan to run again")
        plan = validate_plan(plan.to_json(), PLAN_TOOLS, source=f"replay:{settings.replay_plan.name}")
        journal.add("plan_loaded", path=str(settings.replay_plan), saved_question=saved.question)
    outcome = await run_task(
        question, manager, dispatcher(ctx, packet), journal, cwc, settings.max_revisions, plan=plan
    )
    save_state(ctx.workspace, outcome.state(question), cwc)
    ctx.memory["task"] = {"status": outcome.status, "answer": outcome.answer, "revisions": outcome.revisions}
    if outcome.status != "COMPLETED":
        raise TaskFailed(outcome.answer)
    return FinalAnswer(
        answer=outcome.answer,
        method=f"orchestrated ({outcome.plan.source if outcome.plan else 'no plan'}, {outcome.revisions} revisions)",
        question=question,
        reading=cwc.key_findings[-1] if cwc.key_findings else "",
        candidates=[],
        facts_used=len(cwc.key_findings),
        triples_seen=0,
        made_by=made_by(outcome),
    )


def made_by(outcome: TaskOutcome) -> dict[str, Maker]:
    """Who made each decision of the plan that answered: the plan itself (the model, or a
    template matched on the question's form), then each step (the model, or a tool alone)."""
    assert outcome.plan is not None and outcome.execution is not None
    out: dict[str, Maker] = {"plan": "model" if outcome.plan.source == "model" else "template"}
    for step_id, output in outcome.execution.outputs.items():
        out[step_id] = "model" if output.made_by == "model" else "tool"
    return out


def setup(settings: ToolSettings) -> None:
    """Load and validate the plan templates when the agent starts (raises PlanError naming the
    file), and check that a plan to replay exists."""
    templates(settings.templates_dir or BUNDLED_TEMPLATES)
    if settings.replay_plan is not None and not settings.replay_plan.is_file():
        raise PlanError([f"REPLAY_PLAN {settings.replay_plan} does not exist"])


TOOL = Tool(
    "orchestrator", PacketType.DOC_INIT, PacketType.DATA_EVENT, run, tag=FINAL_ANSWER_TAG,
    description="plans, hands sub-tasks to workers, replans, answers",
    reads=frozenset({PacketType.RESULT}), setup=setup,
    uses_schemas=lambda s: "json" if s.model_plans else None,  # the plans the model writes
)  # fmt: skip
