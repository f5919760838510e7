
"""Subject and predicate of a clause, from the words' possible parts of speech."""

from __future__ import annotations

import pytest

from gaiamesh.orchestrated.heuristics import split_subject
from gaiamesh.orchestrated.orchestrator import BUNDLED_TEMPLATES, templates
from gaiamesh.orchestrated.plan_templates import Template


def reads(template: Template, question: str, expected: dict[str, str]) -> bool:
    """Whether ``template`` reads ``question`` with these slots (among the ones it fills)."""
    slots = template.match(question)
    return slots is not None and expected.items() <= slots.items()


@pytest.mark.parametrize(
    ("clause", "split"),
    [
        ("the members live in the town", ("the members", "live in the town")),
        ("households own cars", ("households", "own cars")),  # "own" cannot be a noun: the verb
        ("the tram passengers ride at night", ("the tram passengers", "ride at night")),  # compound noun
        ("the record holders come first", ("the record holders", "come first")),  # after "the": not a verb
        ("the harbour", None),
        # a relative clause with no "that" stays in the subject; a capitalised word is a name's
        ("the money Ada Byrne raised came from donors", ("the money Ada Byrne raised", "came from donors")),
        ("the boats she built sank", ("the boats she built", "sank")),
        ("the members of the Harrow Club voted", ("the members of the Harrow Club", "voted")),
        ("Ada Byrne built the hall", ("Ada Byrne", "built the hall")),
    ],
)
def test_split_subject(clause: str, split: tuple[str, str] | None) -> None:
    assert split_subject(clause) == split


def test_templates_read_modal_auxiliaries() -> None:
    loaded = {t.name: t for t in templates(BUNDLED_TEMPLATES)}
    assert reads(loaded["difference"], "How many more seats could the new hall hold than the old one?", {
        "unit": "seats", "a": "the new hall hold", "b": "the old one"})  # fmt: skip


def test_comparatives_and_totals_over_two_things() -> None:
    loaded = {t.name: t for t in templates(BUNDLED_TEMPLATES)}
    slots = loaded["difference"].match("How much longer is the north pier than the south pier, in metres?")
    assert reads(
        loaded["difference"],
        "How much longer is the north pier than the south pier, in metres?",
        {"a": "the north pier", "b": "the south pier", "_unit": "metres"},
    )
    assert slots is not None
    # the unit the question asks in goes to every number look-up that names none
    steps = [s for st in loaded["difference"].fill(slots)["stages"] for s in st["steps"]]
    assert [s["sub_task_input"].get("unit") for s in steps if s["tool_name"] == "find_fact"] == [
        "metres",
        "metres",
    ]


def test_ages_changes_and_ratios() -> None:
    loaded = {t.name: t for t in templates(BUNDLED_TEMPLATES)}
    assert reads(loaded["duration"], "How many years older was the painter than his brother?", {
        "a": "the painter", "b": "his brother"})  # fmt: skip
    # "by how much" names no unit: the slot is empty, not missing (a missing slot fails the plan)
    assert reads(loaded["difference"], "By how much did the population grow from 1901 to 1951?", {
        "unit": "", "what": "the population", "a": "1901", "b": "1951"})  # fmt: skip
    assert reads(loaded["ratio"], "How many times larger was the new hall than the old one?", {
        "a": "the new hall", "b": "the old one"})  # fmt: skip


async def test_a_unit_phrase_leaves_the_slot_and_a_scale_divides_the_answer() -> None:
    from gaiamesh.orchestrated.heuristics import answer_scale, drop_unit
    from gaiamesh.orchestrated.journal import Journal
    from gaiamesh.orchestrated.orchestrator import DEFAULT_TEMPLATE
    from gaiamesh.orchestrated.plan_tools import PLAN_TOOLS
    from gaiamesh.orchestrated.planner import PlanManager

    assert (
        drop_unit("1950, in tonnes") == "1950" and drop_unit("the lock in the town") == "the lock in the town"
    )
    assert (
        answer_scale("What is the total, in million cubic metres?") == 1_000_000
        and answer_scale("How many?") == 1
    )
    manager = PlanManager(PLAN_TOOLS, templates(BUNDLED_TEMPLATES), DEFAULT_TEMPLATE)
    plan = await manager.plan(
        "What is the total of the north tank and the south tank, in millions of litres?", Journal()
    )
    final = [s for s in plan.steps() if s.is_final_answer][0]
    assert final.sub_task_input["expression"].endswith(") / 1000000")


def test_a_function_word_is_not_the_noun_of_a_compound() -> None:
    # lemminflect lists "its" as a noun; "win its first cup" is a verb and its object
    assert split_subject("the crew win its first cup at Henley") == (
        "the crew",
        "win its first cup at Henley",
    )
