"""Plans of the orchestrated strategy (seed 004): typed models, validation, references
(templates: ``plan_templates.py``).

A plan is stages of steps. The steps of a stage run at the same time; a step may use the output
of a step of an **earlier** stage through a reference ``@{outputs.STEP_ID.result_data}`` (or
``.processed_result_data``), resolved just before the step is dispatched. Every plan, from a
template or from the model, passes :func:`validate_plan` before anything runs; each broken rule
has its own message, and all of them are reported together.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import ToolError

STEP_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")
REFERENCE = re.compile(r"@\{outputs\.([A-Za-z][A-Za-z0-9_]{0,63})\.(result_data|processed_result_data)\}")
ANY_REFERENCE = re.compile(r"@\{[^}]*\}?")  # anything that looks like a reference, to check its syntax


class PlanError(ToolError):
    """A plan that must not run, with every reason why."""

    def __init__(self, reasons: list[str]) -> None:
        super().__init__("; ".join(reasons))
        self.reasons = reasons


class Step(BaseModel):
    """One step: a tool of a role, its input (references allowed), maybe the final answer."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    step_id: str = Field(alias="stepId")
    assigned_agent_role: str
    tool_name: str
    sub_task_input: dict[str, Any]
    is_final_answer: bool = Field(default=False, alias="isFinalAnswer")
    description: str = ""

    def references(self) -> list[tuple[str, str]]:
        """``(step_id, field)`` of every reference in this step's input."""
        return REFERENCE.findall(json.dumps(self.sub_task_input))


class Stage(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    steps: list[Step] = Field(min_length=1)


class Plan(BaseModel):
    """A validated plan; ``source`` says where it came from (``template:NAME``, ``model``, ...)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    stages: list[Stage] = Field(min_length=1)
    source: str = ""

    def steps(self) -> list[Step]:
        return [s for stage in self.stages for s in stage.steps]

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


# --- the catalog of tools a plan may use -------------------------------------------------------
@dataclass(frozen=True)
class ToolSpec:
    """A tool a step may name: the role that runs it and the model its input must satisfy."""

    role: str
    name: str
    input_model: type[BaseModel]
    description: str


Catalog = Mapping[tuple[str, str], ToolSpec]


def plan_schema(catalog: Catalog) -> dict[str, Any]:
    """The JSON schema a model-written plan is asked to follow (Ollama's ``format``, OpenAI's
    ``response_format``): the :class:`Plan` model's own, each step narrowed to the catalog's
    roles, tools and tool inputs. What a schema cannot say (references to earlier steps, one
    final answer) :func:`validate_plan` still checks."""
    steps = []
    for spec in catalog.values():
        step = Step.model_json_schema(by_alias=True)
        step.pop("title", None)
        step["properties"] = {**step["properties"],
                              "assigned_agent_role": {"const": spec.role}, "tool_name": {"const": spec.name},
                              "sub_task_input": _inline(spec.input_model.model_json_schema())}  # fmt: skip
        step["properties"].pop("description", None)
        step["required"] = ["stepId", "assigned_agent_role", "tool_name", "sub_task_input", "isFinalAnswer"]
        steps.append(step)
    stage = {"type": "object", "properties": {"steps": {"type": "array", "items": {"anyOf": steps}, "minItems": 1}},
             "required": ["steps"], "additionalProperties": False}  # fmt: skip
    return {"type": "object", "properties": {"stages": {"type": "array", "items": stage, "minItems": 1}},
            "required": ["stages"], "additionalProperties": False}  # fmt: skip


# What a grammar built from the schema need not carry: words for people, and defaults.
_LEFT_OUT = frozenset({"title", "description", "default"})
GRAMMAR_MAX_LENGTH = 100  # a longer bound unrolls into a grammar llama.cpp cannot hold


def _too_long(key: str, value: Any) -> bool:
    """A length bound too long to unroll; validate_plan still checks it."""
    return key in ("maxLength", "maxItems") and isinstance(value, int) and value > GRAMMAR_MAX_LENGTH


def _inline(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool input's schema without titles, descriptions, defaults, long length bounds and
    ``$defs`` (inlined), so that every step's alternative stands alone and a grammar can hold it."""
    defs = schema.pop("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return walk(dict(defs[node["$ref"].rsplit("/", 1)[1]]))
            return {k: walk(v) for k, v in node.items() if k not in _LEFT_OUT and not _too_long(k, v)}
        return [walk(v) for v in node] if isinstance(node, list) else node

    return walk(schema)  # type: ignore[no-any-return]


def _structure_reasons(raw: Any) -> list[str]:
    if not isinstance(raw, dict):
        return [f"a plan must be a JSON object with 'stages', got {type(raw).__name__}"]
    stages = raw.get("stages")
    if not isinstance(stages, list) or not stages:
        return ["a plan needs a non-empty list 'stages'"]
    reasons = []
    for i, stage in enumerate(stages, 1):
        steps = stage.get("steps") if isinstance(stage, dict) else None
        if not isinstance(steps, list) or not steps:
            reasons.append(f"stage {i}: needs a non-empty list 'steps'")
            continue
        for j, step in enumerate(steps, 1):
            if not isinstance(step, dict):
                reasons.append(f"stage {i} step {j}: must be an object")
            elif not step.get("stepId"):
                reasons.append(f"stage {i} step {j}: stepId is missing")
    return reasons


def validate_plan(raw: Any, catalog: Catalog, source: str = "") -> Plan:
    """The plan in ``raw`` (a decoded JSON object), checked against every rule; raises
    :class:`PlanError` with all the reasons it must not run."""
    reasons = _structure_reasons(raw)
    if reasons:
        raise PlanError(reasons)
    try:
        plan = Plan.model_validate({**raw, "source": source or raw.get("source", "")})
    except ValidationError as exc:
        raise PlanError(
            [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
        ) from exc
    stage_of: dict[str, int] = {}
    for i, stage in enumerate(plan.stages):
        for step in stage.steps:
            if not STEP_ID.match(step.step_id):
                reasons.append(f"stepId {step.step_id!r}: use a letter, then letters, digits or _")
            if step.step_id in stage_of:
                reasons.append(f"stepId {step.step_id!r} is used twice")
            stage_of.setdefault(step.step_id, i)
    for i, stage in enumerate(plan.stages):
        for step in stage.steps:
            reasons += _step_reasons(step, i, stage_of, catalog)
    finals = [s.step_id for s in plan.steps() if s.is_final_answer]
    if len(finals) != 1:
        reasons.append(
            f"exactly one step must be marked isFinalAnswer, found {len(finals)}"
            + (f" ({', '.join(finals)})" if finals else "")
        )
    elif finals[0] not in {s.step_id for s in plan.stages[-1].steps}:
        reasons.append(f"the final-answer step {finals[0]!r} must be in the last stage")
    if reasons:
        raise PlanError(reasons)
    return plan


def _step_reasons(step: Step, stage: int, stage_of: Mapping[str, int], catalog: Catalog) -> list[str]:
    reasons = []
    name = f"step {step.step_id!r}"
    spec = catalog.get((step.assigned_agent_role, step.tool_name))
    if spec is None:
        known = ", ".join(f"{r}/{t}" for r, t in sorted(catalog))
        reasons.append(f"{name}: unknown role/tool {step.assigned_agent_role}/{step.tool_name} (known: {known})")
    else:
        # References stand for values not known yet: check the input's shape with them in place.
        try:
            spec.input_model.model_validate(_placeholders(step.sub_task_input))
        except ValidationError as exc:
            for e in exc.errors():
                where = ".".join(str(p) for p in e["loc"]) or "input"
                reasons.append(f"{name}: input {where}: {e['msg']}")
    text = json.dumps(step.sub_task_input)
    for token in ANY_REFERENCE.findall(text):
        if not REFERENCE.fullmatch(token):
            reasons.append(
                f"{name}: bad reference {token!r} (write @{{outputs.STEP_ID.result_data}} or "
                "@{outputs.STEP_ID.processed_result_data})"
            )
    for ref, _field in step.references():
        if ref not in stage_of:
            reasons.append(f"{name}: references unknown step {ref!r}")
        elif stage_of[ref] == stage:
            reasons.append(f"{name}: references {ref!r} of the same stage (they run at the same time)")
        elif stage_of[ref] > stage:
            reasons.append(f"{name}: references {ref!r} of a later stage")
    return reasons


def _placeholders(value: Any) -> Any:
    """``value`` with each whole-value reference replaced by a stand-in string."""
    if isinstance(value, dict):
        return {k: _placeholders(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_placeholders(v) for v in value]
    if isinstance(value, str) and REFERENCE.fullmatch(value):
        return "0"
    return value


# --- references --------------------------------------------------------------------------------
class UnresolvedReference(ToolError, LookupError):
    """A reference that cannot be resolved: unknown step, step not completed, missing field."""


@dataclass(frozen=True)
class StepOutput:
    """What a step produced: the worker's result (or the orchestrator's own tool's)."""

    status: str  # COMPLETED | FAILED
    result_data: Any = None
    processed_result_data: Any = None
    error: str | None = None
    evidence: str | None = None
    made_by: str | None = None  # "model" or "tool": who decided the result (None: not said)


def resolve(value: Any, outputs: Mapping[str, StepOutput]) -> Any:
    """``value`` with its references replaced by the outputs of earlier steps. A string that is
    exactly one reference takes the referenced value as it is (a number stays a number);
    references inside longer text are replaced by their text."""
    if isinstance(value, dict):
        return {k: resolve(v, outputs) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, outputs) for v in value]
    if not isinstance(value, str):
        return value
    whole = REFERENCE.fullmatch(value)
    if whole:
        return _lookup(whole.group(1), whole.group(2), outputs)
    return REFERENCE.sub(lambda m: str(_lookup(m.group(1), m.group(2), outputs)), value)


def _lookup(step_id: str, field: str, outputs: Mapping[str, StepOutput]) -> Any:
    out = outputs.get(step_id)
    if out is None:
        raise UnresolvedReference(f"reference to step {step_id!r}, which has not run")
    if out.status != "COMPLETED":
        raise UnresolvedReference(f"reference to step {step_id!r}, which did not complete ({out.error})")
    value = getattr(out, field)
    if value is None:
        raise UnresolvedReference(f"step {step_id!r} has no {field}")
    return value
