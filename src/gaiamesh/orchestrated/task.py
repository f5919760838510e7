"""One task, end to end: plan, execute, replan on failure up to ``MAX_REVISIONS``, answer.

The loop of seed 004's ``OrchestratorAgent``, free of sockets: steps are carried out by the
``dispatch`` it is given. Every decision goes to the journal as it happens.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .executor import Dispatch, Execution, execute
from .journal import Journal, TaskState, WorkingContext
from .plan import Plan
from .planner import PlanManager


@dataclass
class TaskOutcome:
    status: str  # COMPLETED | FAILED
    answer: str  # the final answer, or why there is none
    plan: Plan | None
    execution: Execution | None
    revisions: int

    def state(self, question: str) -> TaskState:
        return TaskState(
            question=question, status=self.status, answer=self.answer, revisions=self.revisions,
            plan=self.plan.to_json() if self.plan else None,
            execution=self.execution.to_json() if self.execution else None,
        )  # fmt: skip


def answer_text(value: object) -> str:
    """A final answer as text: whole numbers without a decimal point."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


async def run_task(
    question: str,
    manager: PlanManager,
    dispatch: Dispatch,
    journal: Journal,
    cwc: WorkingContext,
    max_revisions: int,
    plan: Plan | None = None,
) -> TaskOutcome:
    """Plan (or take ``plan``), execute, and revise after each failure until the task completes
    or ``max_revisions`` revisions have failed."""
    if plan is None:
        plan = await manager.plan(question, journal)
    revision = 0
    while True:
        journal.add("attempt_started", attempt=revision + 1, source=plan.source, plan=plan.to_json())
        run = await execute(plan, dispatch, observe=lambda event, fields: journal.add(event, **fields))
        cwc.update(run, revision + 1)
        journal.add(
            "attempt_finished", attempt=revision + 1, success=run.success,
            failed_step=asdict(run.failed) if run.failed else None,
        )  # fmt: skip
        if run.success:
            if run.final_answer is None:
                # Validation guarantees a final-answer step; it completed without a value.
                cwc.errors.append("the final-answer step returned nothing")
                return _failed(journal, cwc, plan, run, revision)
            answer = answer_text(run.final_answer)
            journal.add("task_completed", answer=answer, revisions=revision)
            return TaskOutcome("COMPLETED", answer, plan, run, revision)
        if revision >= max_revisions:
            journal.add("max_revisions_reached", limit=max_revisions)
            return _failed(journal, cwc, plan, run, revision)
        revision += 1
        journal.add("replan_started", revision=revision)
        revised = await manager.revise(question, cwc, run, plan, journal, last=revision >= max_revisions)
        if revised is None:
            journal.add("replan_failed", revision=revision, why="no valid plan")
            return _failed(journal, cwc, plan, run, revision)
        journal.add("replan_succeeded", revision=revision, source=revised.source)
        plan = revised


def _failed(journal: Journal, cwc: WorkingContext, plan: Plan, run: Execution, revisions: int) -> TaskOutcome:
    explanation = cwc.explain()
    journal.add("task_failed", why=explanation, revisions=revisions)
    return TaskOutcome("FAILED", explanation, plan, run, revisions)
