"""Plan validation (each rule with its own message), references, templates."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from gaiamesh.agents.catalog import get_tool
from gaiamesh.orchestrated.orchestrator import BUNDLED_TEMPLATES, DEFAULT_TEMPLATE, templates
from gaiamesh.orchestrated.plan import (
    PlanError,
    StepOutput,
    UnresolvedReference,
    resolve,
    validate_plan,
)
from gaiamesh.orchestrated.plan_templates import Template, load_templates
from gaiamesh.orchestrated.plan_tools import PLAN_TOOLS


def reads(template: Template, question: str, expected: dict[str, str]) -> bool:
    """Whether ``template`` reads ``question`` with these slots (among the ones it fills)."""
    slots = template.match(question)
    return slots is not None and expected.items() <= slots.items()


def step(
    sid: str, role: str = "research", tool: str = "find_fact", final: bool = False, **inp: Any
) -> dict[str, Any]:
    return {"stepId": sid, "assigned_agent_role": role, "tool_name": tool,
            "sub_task_input": inp or {"query": "opened", "answer_type": "year"}, "isFinalAnswer": final}  # fmt: skip


def good() -> dict[str, Any]:
    return {
        "stages": [
            {"steps": [step("a"), step("b")]},
            {"steps": [step("c", "utility", "calculator", True,
                            expression="@{outputs.b.processed_result_data} - @{outputs.a.processed_result_data}")]},
        ]
    }  # fmt: skip


def reasons(raw: Any) -> list[str]:
    with pytest.raises(PlanError) as exc:
        validate_plan(raw, PLAN_TOOLS)
    return exc.value.reasons


def test_a_good_plan_validates() -> None:
    plan = validate_plan(good(), PLAN_TOOLS, source="test")
    assert [s.step_id for s in plan.steps()] == ["a", "b", "c"] and plan.source == "test"
    assert plan.stages[1].steps[0].references() == [
        ("b", "processed_result_data"),
        ("a", "processed_result_data"),
    ]


def edit(change: Any) -> dict[str, Any]:
    raw = copy.deepcopy(good())
    change(raw)
    return raw


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda p: p["stages"][0]["steps"][0].pop("stepId"), "stage 1 step 1: stepId is missing"),
        (lambda p: p["stages"][0]["steps"][1].update(stepId="a"), "stepId 'a' is used twice"),
        (lambda p: p["stages"][0]["steps"][1].update(stepId="1b"), "stepId '1b': use a letter"),
        (
            lambda p: p["stages"][0]["steps"][0].update(tool_name="web_crawl"),
            "unknown role/tool research/web_crawl",
        ),
        (
            lambda p: p["stages"][0]["steps"][0].update(assigned_agent_role="utility"),
            "unknown role/tool utility/find_fact",
        ),
        (
            lambda p: p["stages"][0]["steps"][0]["sub_task_input"].update(answer_type="colour"),
            "input answer_type",
        ),
        (lambda p: p["stages"][0]["steps"][0]["sub_task_input"].pop("query"), "input query: Field required"),
        (
            lambda p: p["stages"][1]["steps"][0]["sub_task_input"].update(expression="@{outputs.b} + 1"),
            "bad reference '@{outputs.b}'",
        ),
        (
            lambda p: p["stages"][1]["steps"][0]["sub_task_input"].update(
                expression="@{outputs.zz.result_data}"
            ),
            "references unknown step 'zz'",
        ),
        (
            lambda p: p["stages"][0]["steps"][1]["sub_task_input"].update(query="@{outputs.a.result_data}"),
            "of the same stage",
        ),
        (
            lambda p: p["stages"][0]["steps"][1]["sub_task_input"].update(query="@{outputs.c.result_data}"),
            "of a later stage",
        ),
        (
            lambda p: p["stages"][1]["steps"][0].update(isFinalAnswer=False),
            "exactly one step must be marked isFinalAnswer, found 0",
        ),
        (lambda p: p["stages"][0]["steps"][0].update(isFinalAnswer=True), "found 2 (a, c)"),
        (lambda p: p["stages"].append({"steps": []}), "stage 3: needs a non-empty list 'steps'"),
    ],
)
def test_each_rule_fails_with_its_own_message(change: Any, message: str) -> None:
    assert any(message in r for r in reasons(edit(change))), reasons(edit(change))


def test_the_final_answer_must_come_last_and_every_reason_is_reported() -> None:
    raw = edit(lambda p: p["stages"].append({"steps": [step("d")]}))
    assert "the final-answer step 'c' must be in the last stage" in reasons(raw)
    both = edit(
        lambda p: (
            p["stages"][0]["steps"][0].update(tool_name="x"),
            p["stages"][0]["steps"][1].update(stepId="a"),
        )
    )
    assert len(reasons(both)) >= 2
    assert reasons("not a plan") == ["a plan must be a JSON object with 'stages', got str"]


def test_references_resolve_to_values_and_fail_precisely() -> None:
    outputs = {
        "a": StepOutput("COMPLETED", "1905", 1905),
        "b": StepOutput("FAILED", error="NotFound: no year"),
    }
    assert resolve({"x": "@{outputs.a.processed_result_data}"}, outputs) == {"x": 1905}  # a number stays one
    assert resolve("since @{outputs.a.result_data}!", outputs) == "since 1905!"
    with pytest.raises(UnresolvedReference, match="'b', which did not complete"):
        resolve("@{outputs.b.result_data}", outputs)
    with pytest.raises(UnresolvedReference, match="'zz', which has not run"):
        resolve("@{outputs.zz.result_data}", outputs)
    with pytest.raises(UnresolvedReference, match="'c' has no processed_result_data"):
        resolve("@{outputs.c.processed_result_data}", {"c": StepOutput("COMPLETED", "a text")})


def test_bundled_templates_load_and_match_questions_by_their_form() -> None:
    loaded = {t.name: t for t in templates(BUNDLED_TEMPLATES)}
    assert DEFAULT_TEMPLATE in loaded and len(loaded) >= 5
    assert reads(
        loaded["duration"],
        "How many years passed between the founding of the mill and its closure?",
        {"a": "the founding of the mill", "b": "its closure"},
    )
    assert reads(loaded["age_at_event"], "How old was Ada Byrne when she won the prize?", {
        "who": "Ada Byrne", "event": "she won the prize"})  # fmt: skip
    assert loaded["duration"].match("Who founded the mill?") is None
    # the main clause's auxiliary is the last one: the first event may be a clause of its own
    assert reads(
        loaded["duration"],
        "How many years after the bridge was opened was it widened?",
        {"a": "the bridge was opened", "b": "the bridge widened"},
    )  # "it": the other clause's subject


def test_a_broken_template_is_refused_at_load_with_its_file_name(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text(json.dumps({"pattern": "(?P<a>.+)", "plan": edit(
        lambda p: p["stages"][0]["steps"][0].update(query="${missing}"))}))  # fmt: skip
    with pytest.raises(PlanError, match=r"template bad.json: .*slot \$\{missing\}"):
        load_templates(tmp_path, PLAN_TOOLS)
    (tmp_path / "bad.json").write_text(json.dumps({"pattern": "(unclosed", "plan": good()}))
    with pytest.raises(PlanError, match="template bad.json: error"):
        load_templates(tmp_path, PLAN_TOOLS)


def test_an_orchestrator_with_a_broken_template_stops_at_start(tmp_path: Path) -> None:
    from gaiamesh.agents.agent import MeshAgent
    from gaiamesh.settings import load_settings

    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "broken.json").write_text('{"pattern": "(?P<a>.+)", "plan": {"stages": []}}')
    settings = load_settings(
        tool="orchestrator", templates_dir=tmp_path / "t", workspace_root=tmp_path / "ws"
    )
    with pytest.raises(PlanError, match="template broken.json: a plan needs a non-empty list 'stages'"):
        MeshAgent(settings, get_tool(settings.tool))
    templates.cache_clear()


@pytest.mark.parametrize(
    ("question", "name", "slots"),
    [
        ("How long did the ferry service run?", "duration", {"a": "the ferry service run"}),
        ("By how many tonnes did the harvest exceed the forecast?", "difference", {"a": "the harvest", "b": "the forecast"}),
        ("By how many visitors a day did attendance fall between 1990 and 2000?", "difference", {"unit": "visitors a day", "what": "attendance", "a": "1990", "b": "2000"}),
        ("By how much did the debt fall between 1920 and 1930?", "difference", {"unit": "", "what": "the debt", "a": "1920", "b": "1930"}),
        ("How many boats did the two yards build in total?", "sum", None),
        ("How many ships did the north yard and the south yard launch altogether?", "sum", {"unit": "ships", "a": "the north yard", "b": "the south yard"}),
        ("How many more books did the library hold in 1900 than in 1850?", "difference", {"unit": "books", "a": "the library hold in 1900", "b": "in 1850"}),
        ("How many more kilns did the works have than in 1815?", "difference", {"unit": "kilns", "a": "the works have", "b": "in 1815"}),
    ],
)  # fmt: skip
def test_templates_for_more_question_forms(question: str, name: str, slots: dict[str, str] | None) -> None:
    loaded = {t.name: t for t in templates(BUNDLED_TEMPLATES)}
    assert loaded[name].match(question) is None if slots is None else reads(loaded[name], question, slots)
    if slots is not None:  # and no template of higher priority reads the question first
        reading = [t.name for t in templates(BUNDLED_TEMPLATES) if t.match(question) is not None]
        assert reading[0] == name, reading


def test_an_elided_noun_after_an_ordinal_is_the_other_slots() -> None:
    loaded = {t.name: t for t in templates(BUNDLED_TEMPLATES)}
    assert reads(
        loaded["duration"],
        "How many years passed between the society's first show and its last?",
        {"a": "the society's first show", "b": "the society's last show"},
    )


def test_a_shape_of_several_forms_fills_what_each_form_fixes() -> None:
    loaded = {t.name: t for t in templates(BUNDLED_TEMPLATES)}
    duration = loaded["duration"]
    # "how long did X run": both years are looked up for the same X
    slots = duration.match("How long did the ferry service run?")
    assert slots is not None and slots["b"] == slots["a"] == "the ferry service run"
    # between two births: the form fixes what each look-up asks for
    finds = [s["sub_task_input"] for st in duration.fill(duration.match("How many years older was the smith than the miller?") or {})["stages"]
             for s in st["steps"] if s["tool_name"] == "find_fact"]  # fmt: skip
    assert [f["query"] for f in finds] == ["the smith born", "the miller born"]
    change = loaded["percentage_change"]
    plan = change.fill(change.match("By what percentage did the herd grow from 1990 to 2000?") or {})
    (calc,) = [s for st in plan["stages"] for s in st["steps"] if s["tool_name"] == "calculator"]
    assert "/ @{outputs.a.processed_result_data} * 100" in calc["sub_task_input"]["expression"]


def test_a_template_without_forms_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty.json").write_text(json.dumps({"forms": [], "plan": good()}))
    with pytest.raises(PlanError, match="template empty.json: ValueError: no forms"):
        load_templates(tmp_path, PLAN_TOOLS)
