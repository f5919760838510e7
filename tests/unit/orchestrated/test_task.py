"""PlanExecutor and the replanning loop, with a plain dispatch function (no relay)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from gaiamesh.orchestrated.executor import execute
from gaiamesh.orchestrated.journal import Journal, WorkingContext
from gaiamesh.orchestrated.orchestrator import BUNDLED_TEMPLATES, DEFAULT_TEMPLATE, templates
from gaiamesh.orchestrated.plan import Step, StepOutput, plan_schema, validate_plan
from gaiamesh.orchestrated.plan_tools import PLAN_TOOLS
from gaiamesh.orchestrated.planner import PlanManager
from gaiamesh.orchestrated.task import run_task

from .test_plan import good, step


class Workers:
    """Answers steps from a table; records the order and overlap of calls."""

    def __init__(self, answers: dict[str, list[StepOutput]]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.running = 0
        self.most = 0

    async def __call__(self, s: Step, resolved: dict[str, Any]) -> StepOutput:
        self.calls.append((s.step_id, resolved))
        self.running += 1
        self.most = max(self.most, self.running)
        await asyncio.sleep(0)  # let the other steps of the stage start (this is the overlap probe)
        self.running -= 1
        queue = self.answers[s.step_id]
        return queue.pop(0) if len(queue) > 1 else queue[0]


def years(a: int = 1905, b: int = 1931) -> dict[str, list[StepOutput]]:
    return {
        "a": [StepOutput("COMPLETED", str(a), a)],
        "b": [StepOutput("COMPLETED", str(b), b)],
        "c": [StepOutput("COMPLETED", str(b - a), b - a)],
    }


async def test_stages_in_order_steps_of_a_stage_at_once_references_resolved() -> None:
    workers = Workers(years())
    run = await execute(validate_plan(good(), PLAN_TOOLS), workers)
    assert run.success and run.final_answer == "26"
    assert [c[0] for c in workers.calls] == ["a", "b", "c"] and workers.most == 2  # a and b overlapped
    assert workers.calls[2][1] == {"expression": "1931 - 1905"}
    assert [e.step_id for e in run.context] == ["a", "b", "c"]
    assert run.context[2].input["expression"].startswith("@{outputs.b")  # context keeps the plan's input


async def test_a_failed_step_stops_the_plan_with_its_details() -> None:
    answers = years() | {"b": [StepOutput("FAILED", error="NotFound: no year for 'closed'")]}
    workers = Workers(answers)
    run = await execute(validate_plan(good(), PLAN_TOOLS), workers)
    assert not run.success and run.failed is not None
    assert (run.failed.step_id, run.failed.error) == ("b", "NotFound: no year for 'closed'")
    assert [c[0] for c in workers.calls] == ["a", "b"]  # stage 2 never ran
    assert run.errors == ["b (find_fact): NotFound: no year for 'closed'"]


def manager() -> PlanManager:
    return PlanManager(PLAN_TOOLS, templates(BUNDLED_TEMPLATES), DEFAULT_TEMPLATE)


async def test_a_step_that_fails_once_then_succeeds_completes_after_one_revision() -> None:
    answers = years() | {"a": [StepOutput("FAILED", error="WorkerUnavailable: worker r1 died"), StepOutput("COMPLETED", "1905", 1905)]}
    journal, cwc = Journal(), WorkingContext("q")
    plan = validate_plan(good(), PLAN_TOOLS, source="test")
    outcome = await run_task("q", manager(), Workers(answers), journal, cwc, max_revisions=2, plan=plan)
    assert outcome.status == "COMPLETED" and outcome.answer == "26" and outcome.revisions == 1
    events = journal.events()
    assert events.count("attempt_started") == 2 and "replan_succeeded" in events and events[-1] == "task_completed"
    assert any("worker r1 died" in e for e in cwc.errors) and cwc.key_findings


async def test_a_step_that_always_fails_ends_with_an_explanation_after_max_revisions() -> None:
    answers = years() | {"a": [StepOutput("FAILED", error="Timeout: no result within 5s")]}
    journal, cwc = Journal(), WorkingContext("q")
    plan = validate_plan(good(), PLAN_TOOLS, source="test")
    outcome = await run_task("q", manager(), Workers(answers), journal, cwc, max_revisions=2, plan=plan)
    assert outcome.status == "FAILED" and outcome.revisions == 2
    assert "could not answer" in outcome.answer and "Timeout" in outcome.answer
    assert journal.events().count("attempt_started") == 3
    assert journal.events()[-2:] == ["max_revisions_reached", "task_failed"]


async def test_a_non_transient_failure_gives_way_to_the_next_template_then_the_default_plan() -> None:
    answers = years() | {"a": [StepOutput("FAILED", error="NotFound: no year")],
                         "answer": [StepOutput("COMPLETED", "12")]}  # fmt: skip
    journal = Journal()
    question = "How many years older is the painter than his brother?"  # years_older, then comparative
    plan = validate_plan(good(), PLAN_TOOLS, source="template:duration")
    outcome = await run_task(question, manager(), Workers(answers), journal, WorkingContext("q"), 3, plan)
    assert outcome.status == "COMPLETED" and outcome.answer == "12"
    assert outcome.plan is not None and outcome.plan.source == f"template:{DEFAULT_TEMPLATE}"
    # the one template after duration that reads the question, then the default
    chosen = [e for e in journal.entries if e["event"] == "plan_chosen"]
    assert [e["source"] for e in chosen] == ["template:difference", f"template:{DEFAULT_TEMPLATE}"]
    assert chosen[0]["why"] == "the next template after duration"


async def test_the_last_revision_allowed_goes_to_the_default_plan() -> None:
    answers = years() | {"a": [StepOutput("FAILED", error="NotFound: no year")],
                         "answer": [StepOutput("COMPLETED", "1931")]}  # fmt: skip
    journal = Journal()
    plan = validate_plan(good(), PLAN_TOOLS, source="template:duration")
    outcome = await run_task("When did it close?", manager(), Workers(answers), journal, WorkingContext("q"), 1, plan)
    assert outcome.status == "COMPLETED" and outcome.revisions == 1
    assert outcome.plan is not None and outcome.plan.source == f"template:{DEFAULT_TEMPLATE}"


async def test_an_invalid_model_plan_is_rejected_with_reasons_and_replaced() -> None:
    async def write(prompt: str, schema: dict[str, Any] | None) -> str:
        assert schema is None  # free text: no schema asked for
        assert "Question: Who built it?" in prompt and "@{outputs.STEP_ID.result_data}" in prompt
        assert prompt.endswith('Plan: {"stages": [{"steps": [{"stepId": "')  # the model continues a plan
        return 'x", "assigned_agent_role": "research", "tool_name": "nope", "sub_task_input": {}}]}]}'

    m = PlanManager(PLAN_TOOLS, templates(BUNDLED_TEMPLATES), DEFAULT_TEMPLATE, write)
    journal = Journal()
    plan = await m.plan("Who built it?", journal)
    assert plan.source == f"template:{DEFAULT_TEMPLATE}"
    (rejected,) = [e for e in journal.entries if e["event"] == "plan_rejected"]
    assert any("unknown role/tool research/nope" in r for r in rejected["reasons"])
    assert any("exactly one step must be marked isFinalAnswer" in r for r in rejected["reasons"])


async def test_a_template_is_chosen_by_the_question_and_its_slots_filled() -> None:
    journal = Journal()
    plan = await manager().plan("How many years passed between the mill opening and the fire?", journal)
    assert plan.source == "template:duration"
    finds = [s for s in plan.steps() if s.tool_name == "find_fact"]
    assert [s.sub_task_input["query"] for s in finds] == ["the mill opening", "the fire"]
    assert finds[1].sub_task_input["exclude"] == ["@{outputs.a.processed_result_data}"]  # a second, different year
    assert journal.entries[0]["event"] == "plan_chosen"


async def test_a_plan_held_to_the_schema_is_written_whole_and_the_schema_names_the_catalog() -> None:
    asked: list[tuple[str, dict[str, Any] | None]] = []

    async def write(prompt: str, schema: dict[str, Any] | None) -> str:
        asked.append((prompt, schema))
        return json.dumps({"stages": [{"steps": [step("only", final=True)]}]})

    m = PlanManager(PLAN_TOOLS, templates(BUNDLED_TEMPLATES), DEFAULT_TEMPLATE, write, schema=True)
    plan = await m.plan("Who built it?", Journal())
    assert plan.source == "model" and asked[0][0].endswith("Plan: ")  # the model writes the whole object
    schema = asked[0][1]
    assert schema is not None and schema == plan_schema(PLAN_TOOLS)
    alternatives = schema["properties"]["stages"]["items"]["properties"]["steps"]["items"]["anyOf"]
    assert {(a["properties"]["assigned_agent_role"]["const"], a["properties"]["tool_name"]["const"])
            for a in alternatives} == set(PLAN_TOOLS)  # fmt: skip
    assert "$ref" not in json.dumps(schema)  # every tool input inlined


def test_step_helper_builds_valid_steps() -> None:
    assert validate_plan({"stages": [{"steps": [step("only", final=True)]}]}, PLAN_TOOLS).steps()[0].is_final_answer
