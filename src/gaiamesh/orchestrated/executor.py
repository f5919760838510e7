"""``PlanExecutor``: runs a validated plan stage by stage, the steps of a stage at once.

It knows nothing about sockets: steps are carried out by a ``dispatch`` coroutine (the
orchestrator agent sends a ``subtask`` through the relay and awaits its ``result``; tests pass
a plain function). Before a step is dispatched its references are resolved; a reference that
cannot be resolved fails the step. After a stage with a failed step nothing more runs, and the
execution reports ``failed`` (the step, its input and the error) for the replanning loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from .plan import Plan, Step, StepOutput, UnresolvedReference, resolve

Dispatch = Callable[[Step, dict[str, Any]], Awaitable[StepOutput]]
Observer = Callable[[str, dict[str, Any]], None]


@dataclass(frozen=True)
class FailedStep:
    """``failedStepDetails``: the step that failed, the input it was given and why."""

    step_id: str
    role: str
    tool: str
    input: dict[str, Any]
    error: str


@dataclass(frozen=True)
class ContextEntry:
    """One step of an attempt as the execution context records it (input as the plan wrote it)."""

    step_id: str
    stage: int
    role: str
    tool: str
    input: dict[str, Any]
    status: str
    result: Any = None
    error: str | None = None


@dataclass
class Execution:
    """The outcome of one attempt at a plan."""

    success: bool = True
    context: list[ContextEntry] = field(default_factory=list)
    outputs: dict[str, StepOutput] = field(default_factory=dict)
    key_findings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    failed: FailedStep | None = None
    final_answer: Any = None

    def to_json(self) -> dict[str, Any]:
        return {
            "success": self.success,
            "execution_context": [asdict(e) for e in self.context],
            "key_findings": self.key_findings,
            "errors_encountered": self.errors,
            "failed_step_details": asdict(self.failed) if self.failed else None,
            "final_answer": self.final_answer,
        }


async def execute(plan: Plan, dispatch: Dispatch, observe: Observer | None = None) -> Execution:
    """Run ``plan``: stages in order, the steps of each stage concurrently."""
    run = Execution()
    note = observe or (lambda _event, _fields: None)
    for number, stage in enumerate(plan.stages, 1):
        note("stage_started", {"stage": number, "steps": [s.step_id for s in stage.steps]})
        async with asyncio.TaskGroup() as tasks:
            pending = [tasks.create_task(_run_step(step, run.outputs, dispatch, note)) for step in stage.steps]
        for step, task in zip(stage.steps, pending, strict=True):
            output, resolved = task.result()
            run.outputs[step.step_id] = output
            run.context.append(
                ContextEntry(
                    step.step_id, number, step.assigned_agent_role, step.tool_name, step.sub_task_input,
                    output.status, output.result_data, output.error,
                )
            )  # fmt: skip
            if output.status == "COMPLETED":
                finding = f"{step.step_id} ({step.tool_name}): {output.result_data}"
                if output.evidence:
                    finding += f" (from: {output.evidence})"
                run.key_findings.append(finding)
                if step.is_final_answer:
                    run.final_answer = output.result_data
            else:
                run.errors.append(f"{step.step_id} ({step.tool_name}): {output.error}")
                if run.failed is None:
                    run.success = False
                    run.failed = FailedStep(
                        step.step_id, step.assigned_agent_role, step.tool_name, resolved, output.error or "failed"
                    )
        if not run.success:
            note("stage_failed", {"stage": number, "step": run.failed.step_id if run.failed else None})
            break
    return run


async def _run_step(
    step: Step, outputs: dict[str, StepOutput], dispatch: Dispatch, note: Observer
) -> tuple[StepOutput, dict[str, Any]]:
    try:
        resolved = resolve(step.sub_task_input, outputs)
    except UnresolvedReference as exc:
        note("step_failed", {"step": step.step_id, "error": str(exc)})
        return StepOutput("FAILED", error=str(exc)), step.sub_task_input
    note("step_started", {"step": step.step_id, "role": step.assigned_agent_role, "tool": step.tool_name})
    output = await dispatch(step, resolved)
    event = "step_completed" if output.status == "COMPLETED" else "step_failed"
    note(event, {"step": step.step_id, "result": output.result_data, "error": output.error})
    return output, resolved
