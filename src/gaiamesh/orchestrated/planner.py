"""``PlanManager``: where plans come from, and where revised plans come from after a failure.

A question that a template's pattern matches gets that template's plan, its slots filled from
the question. Otherwise the model writes a plan from a few-shot prompt; a plan that fails
validation is rejected with its reasons (in the journal) and replaced by the default template.
After a failed attempt, a revision is asked of the model with the working context, the failed
step and the failed plan; when the model's revision is not valid, a failure that another try
may cure (a worker that died or timed out) runs the same plan again, a failed template's plan
gives way to the next template that matches (the default template on the last revision
allowed), and the default template's own failure ends it. No valid plan: the task fails.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from .executor import Execution
from .heuristics import answer_scale
from .journal import Journal, WorkingContext
from .plan import Catalog, Plan, PlanError, plan_schema, validate_plan
from .plan_templates import Template

# (prompt, the JSON schema to hold it to or None) -> the model's completion
WritePlan = Callable[[str, dict[str, Any] | None], Awaitable[str]]
TRANSIENT = ("WorkerUnavailable", "Timeout")  # error types another attempt may cure

EXAMPLE = {
    "stages": [
        {"steps": [
            {"stepId": "a", "assigned_agent_role": "research", "tool_name": "find_fact",
             "sub_task_input": {"query": "the bridge opened", "answer_type": "year"}},
            {"stepId": "b", "assigned_agent_role": "research", "tool_name": "find_fact",
             "sub_task_input": {"query": "the bridge closed", "answer_type": "year"}},
        ]},
        {"steps": [
            {"stepId": "c", "assigned_agent_role": "utility", "tool_name": "calculator",
             "sub_task_input": {"expression": "@{outputs.b.processed_result_data} - @{outputs.a.processed_result_data}"},
             "isFinalAnswer": True},
        ]},
    ]
}  # fmt: skip
# A plan of one look-up: the model sees that a plan need not be a calculation, nor about years.
ONE_FACT = {
    "stages": [
        {"steps": [
            {"stepId": "a", "assigned_agent_role": "research", "tool_name": "find_fact",
             "sub_task_input": {"query": "passengers the ferry carried in its first season", "answer_type": "number"},
             "isFinalAnswer": True},
        ]},
    ]
}  # fmt: skip
EXAMPLES = [
    ("How many years after the bridge opened did it close?", EXAMPLE),
    ("How many passengers did the ferry carry in its first season?", ONE_FACT),
]


# The prompt ends inside the JSON, so a base model continues a plan rather than answering.
PLAN_START = '{"stages": [{"steps": [{"stepId": "'


def plan_prompt(question: str, catalog: Catalog, revision: str = "", schema: bool = False) -> str:
    """The few-shot prompt for a plan as JSON (tools, the reference syntax, two examples). Held to
    a schema, the model writes the whole object; free, it continues one already begun."""
    tools = "\n".join(f"- {s.role}/{s.name}: {' '.join(s.description.split())}" for s in catalog.values())
    return (
        "Write a plan as JSON: stages of steps. Steps of one stage run at the same time; a step "
        "may use an earlier stage's output as @{outputs.STEP_ID.result_data} or "
        "@{outputs.STEP_ID.processed_result_data}. Exactly one step has \"isFinalAnswer\": true.\n"
        f"Tools:\n{tools}\n\n"
        + "".join(f"Question: {q}\nPlan: {json.dumps(plan)}\n\n" for q, plan in EXAMPLES)
        + f"{revision}Question: {question}\nPlan: {'' if schema else PLAN_START}"
    )


def _first_json(text: str) -> Any:
    start = text.find("{")
    if start < 0:
        raise PlanError(["the model wrote no JSON object"])
    try:
        value, _ = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError as exc:
        raise PlanError([f"the model's plan is not valid JSON ({exc.msg} at {exc.pos})"]) from exc
    return value


@dataclass(frozen=True)
class Written:
    """A plan the model wrote: its text, whether it parsed as JSON, the plan when it is valid,
    and the reasons when it is not (``gaiamesh bench-plans`` counts them)."""

    text: str
    parsed: bool
    plan: Plan | None
    reasons: list[str]


class PlanManager:
    """Chooses, writes, validates and revises plans."""

    def __init__(
        self,
        catalog: Catalog,
        templates: list[Template],
        default: str,
        write: WritePlan | None = None,
        num_predict: int = 256,
        schema: bool = False,
    ) -> None:
        self.catalog = catalog
        self.templates = templates
        by_name = {t.name: t for t in templates}
        if default not in by_name:
            raise PlanError([f"default template {default!r} not found among {sorted(by_name)}"])
        self.default = by_name[default]
        self.write = write
        self.num_predict = num_predict
        self.schema = plan_schema(catalog) if schema else None

    def from_template(self, template: Template, slots: dict[str, str], question: str = "") -> Plan:
        raw = template.fill(slots)
        scale = answer_scale(question)
        if scale != 1:
            # "in million cubic metres": the final calculation is expressed in that scale.
            for stage in raw["stages"]:
                for step in stage["steps"]:
                    if step.get("isFinalAnswer") and step.get("tool_name") == "calculator":
                        step["sub_task_input"]["expression"] = f"({step['sub_task_input']['expression']}) / {scale}"
        return validate_plan(raw, self.catalog, source=f"template:{template.name}")

    def _default_plan(self, question: str) -> Plan:
        return self.from_template(self.default, self.default.match(question) or {"question": question})

    def _next_template(self, question: str, journal: Journal, after: str | None = None) -> Plan | None:
        """The plan of the first template (highest priority first; after the one named ``after``,
        where given) that matches ``question``, the default aside."""
        names = [t.name for t in self.templates]
        start = names.index(after) + 1 if after in names else 0
        for template in self.templates[start:]:
            if template is self.default:
                continue
            slots = template.match(question)
            if slots is not None:
                try:
                    plan = self.from_template(template, slots, question)
                except PlanError as exc:
                    journal.add("template_rejected", template=template.name, reasons=exc.reasons)
                    continue
                journal.add("plan_chosen", source=plan.source, slots=slots, **({"why": f"the next template after {after}"} if after else {}))
                return plan
        return None

    async def plan(self, question: str, journal: Journal) -> Plan:
        """The first plan for ``question``."""
        chosen = self._next_template(question, journal)
        if chosen is not None:
            return chosen
        if self.write is not None:
            written = await self._from_model(question, journal)
            if written is not None:
                return written
        plan = self._default_plan(question)
        journal.add("plan_chosen", source=plan.source, slots={"question": question})
        return plan

    async def revise(
        self, question: str, cwc: WorkingContext, failed: Execution, plan: Plan, journal: Journal, last: bool = False
    ) -> Plan | None:
        """A new plan after ``failed`` (an attempt at ``plan``), or None when there is none. A
        template's plan that failed gives way to the next template that matches the question,
        unless this is the ``last`` revision allowed: then to the default plan."""
        assert failed.failed is not None
        if self.write is not None:
            context = (
                f"An earlier plan failed.\nFailed plan: {json.dumps(plan.to_json()['stages'])}\n"
                f"Failed step: {json.dumps(failed.failed.__dict__)}\n"
                f"Working context:\n{cwc.render()}\nWrite a corrected plan.\n"
            )
            revised = await self._from_model(question, journal, context)
            if revised is not None:
                return revised
        error = failed.failed.error
        if error.startswith(TRANSIENT):
            journal.add("plan_chosen", source=plan.source, why="the failure may be transient: same plan again")
            return plan
        if plan.source.startswith("template:") and not last:
            following = self._next_template(question, journal, after=plan.source.removeprefix("template:"))
            if following is not None:
                return following
        if not plan.source.startswith(f"template:{self.default.name}"):
            revised = self._default_plan(question)
            journal.add("plan_chosen", source=revised.source, why="fall back to the default plan")
            return revised
        return None

    async def write_plan(self, question: str, revision: str = "") -> Written:
        """One plan written by the model for ``question``, parsed and validated."""
        assert self.write is not None
        prompt = plan_prompt(question, self.catalog, revision, schema=self.schema is not None)
        written = await self.write(prompt, self.schema)
        text = written if self.schema is not None else PLAN_START + written
        try:
            raw = _first_json(text)
        except PlanError as exc:
            return Written(text, False, None, exc.reasons)
        try:
            return Written(text, True, validate_plan(raw, self.catalog, source="model"), [])
        except PlanError as exc:
            return Written(text, True, None, exc.reasons)

    async def _from_model(self, question: str, journal: Journal, revision: str = "") -> Plan | None:
        got = await self.write_plan(question, revision)
        if got.plan is None:
            journal.add("plan_rejected", source="model", reasons=got.reasons, text=got.text[:2000])
            return None
        journal.add("plan_chosen", source="model")
        return got.plan
