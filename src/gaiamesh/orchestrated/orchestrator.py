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

from ..frames import FINAL_ANSWER_TAG, DocInitPacket, FinalAnswer, PacketType, SubTask
from ..tools import ToolContext, register
from ..tools.followup import resolve as resolve_followup
from ..tools.registry import Tool
from .catalog import ORCHESTRATOR, TOOLS
from .executor import Dispatch
from .journal import Journal, WorkingContext, save_state
from .plan import Step, StepOutput, Template, load_templates
from .planner import PlanManager
from .task import run_task

BUNDLED_TEMPLATES = Path(__file__).parent / "templates"
DEFAULT_TEMPLATE = "ask_the_document"


class TaskFailed(ValueError):
    """The task failed after every revision; the message explains why."""


@cache
def templates(folder: Path) -> list[Template]:
    """The plan templates in ``folder``, loaded and validated once per process."""
    return load_templates(folder, TOOLS)


def dispatcher(ctx: ToolContext, packet: DocInitPacket) -> Dispatch:
    """Carry out a step: through the relay to a worker (the orchestrator's own tools later)."""
    assert ctx.ask is not None and ctx.settings is not None
    ask, timeout = ctx.ask, ctx.settings.subtask_timeout
    numbers = itertools.count(1)

    async def dispatch(step: Step, resolved: dict[str, Any]) -> StepOutput:
        if step.assigned_agent_role == ORCHESTRATOR:
            return StepOutput("FAILED", error=f"UnknownTool: the orchestrator has no tool {step.tool_name!r}")
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
            return StepOutput("COMPLETED", result.result_data, result.processed_result_data, evidence=result.evidence)
        details = result.error_details
        kind = details.type if details and details.type else "Failed"
        return StepOutput("FAILED", error=f"{kind}: {details.message if details else 'no details'}")

    return dispatch


async def run(ctx: ToolContext, packet: DocInitPacket) -> FinalAnswer:
    settings = ctx.settings
    assert settings is not None and ctx.workspace is not None
    question = resolve_followup(packet.question, packet.payload.history or [])
    ctx.question = question
    journal = Journal(ctx.workspace / "journal.jsonl")
    cwc = WorkingContext(question)

    async def write(prompt: str) -> str:
        return await ctx.llm.complete(prompt, ctx.usage, num_predict=256, stop=("\n\n", "\nQuestion:"))

    manager = PlanManager(
        TOOLS, templates(settings.templates_dir or BUNDLED_TEMPLATES), DEFAULT_TEMPLATE,
        write if settings.model_plans else None,
    )  # fmt: skip
    outcome = await run_task(question, manager, dispatcher(ctx, packet), journal, cwc, settings.max_revisions)
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
    )


TOOL = register(
    Tool(
        "orchestrator", PacketType.DOC_INIT, PacketType.DATA_EVENT, run, tag=FINAL_ANSWER_TAG,
        description="plans, hands sub-tasks to workers, replans, answers",
        reads=frozenset({PacketType.RESULT}),
    )
)  # fmt: skip
