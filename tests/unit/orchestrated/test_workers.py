"""The worker tools: the calculator refuses what it must, find_fact offers the typed spans of
the best sentences and takes the model's choice, and a worker answers FAILED (never an error
packet) with the reason."""

from __future__ import annotations

from typing import Any

import pytest

from gaiamesh.mesh.frames import PacketType, SubTaskPacket, make_packet
from gaiamesh.mesh.payloads import DocInit
from gaiamesh.models.llm import LLMClient, LLMUsage
from gaiamesh.orchestrated.calculator import CalculatorError, calculate, format_number, to_number
from gaiamesh.orchestrated.plan_tools import FindFact
from gaiamesh.orchestrated.reading import Candidate, evidence, nearness, step_question
from gaiamesh.orchestrated.workers import worker
from gaiamesh.tools.tool import ToolContext

from ..fakes import Chooser

DOC = (
    "The Harbour Museum was founded in 1887 by the merchant Ellis Marr. "
    "Its glass hall opened in 1902, fifteen years after the founding. "
    "The museum closed during the war and reopened in 1946. "
    "It holds 12,400 objects, and 3,100 of them are on display."
)


@pytest.mark.parametrize(
    ("expr", "value"),
    [("1931 - 1905", 26), ("abs(1887 - 1902)", 15), ("round(3100 / 12400 * 100, 1)", 25.0), ("2 ** 10", 1024),
     ("(1 + 2) * -3", -9), ("max(4, 9) // 2", 4)],
)  # fmt: skip
def test_calculator_evaluates_arithmetic(expr: str, value: float) -> None:
    assert calculate(expr) == value


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("9 ** 999999", "power too large"),
        ("'a' * 10", "only numbers are allowed"),
        ("(1).__class__", "attribute access is not allowed"),
        ("[1, 2][0]", "subscripts are not allowed"),
        ("__import__('os')", "unknown name '__import__'"),
        ("x + 1", "unknown name 'x'"),
        ("1 / 0", "division by zero"),
        ("1 +", "not an arithmetic expression"),
        ("1" * 600, "expression too long"),
        ("10.0 ** 60 * 10.0 ** 60", "result out of range"),
        ("round(1, ndigits=2)", "without keywords"),
        ("lambda: 1", "Lambda is not allowed"),
    ],
)
def test_calculator_refuses_with_a_clear_message(expr: str, message: str) -> None:
    with pytest.raises(CalculatorError, match=message):
        calculate(expr)


def test_numbers_read_from_spans() -> None:
    assert [to_number(s) for s in ("1,250 tonnes", "2.5 million", "twelve", "forty-two", "1887", "none")] == [
        1250, 2_500_000, 12, 42, 1887, None]  # fmt: skip
    assert (format_number(26.0), format_number(25.125), format_number(1 / 3)) == ("26", "25.125", "0.3333")
    assert (to_number("8.2 million pounds"), to_number("0.3 billion")) == (8_200_000, 300_000_000)


def ctx(doc: str | None = DOC, llm: Any = None, schemas: bool = False) -> ToolContext:
    llm = llm or LLMClient.ollama("http://127.0.0.1:9", "none")  # never reached by these tools
    chunks = [doc[i : i + 400] for i in range(0, len(doc), 400)] if doc else None
    return ToolContext(llm=llm, usage=LLMUsage(), doc=DocInit(chunks=chunks) if chunks else None, schemas=schemas)


def sub(role: str, tool: str, **inp: Any) -> SubTaskPacket:
    body = {"sub_task_id": "t1", "parent_task_id": "run", "assigned_agent_role": role, "tool_name": tool,
            "sub_task_input": inp}  # fmt: skip
    packet = make_packet(PacketType.SUBTASK, body, run_id="run", src="o", seq=1)
    assert isinstance(packet, SubTaskPacket)
    return packet


async def test_find_fact_offers_the_typed_spans_and_takes_the_models_choice() -> None:
    research = worker("research")
    model = Chooser("1902")
    opened = await research(ctx(llm=model), sub("research", "find_fact", query="the museum opened its glass hall", answer_type="year"))
    assert (opened.status, opened.result_data, opened.processed_result_data) == ("COMPLETED", "1902", 1902)
    assert "glass hall" in (opened.evidence or "") and {"1887", "1902"} <= set(model.offered[-1])
    # a value another step found is no candidate, nor a number the query itself states
    other = Chooser("1902")
    again = await research(ctx(llm=other), sub("research", "find_fact", query="the museum opened", answer_type="year",
                                               exclude=[1902]))  # fmt: skip
    assert "1902" not in other.offered[-1] and again.processed_result_data != 1902
    counted = Chooser("none of them")
    shown = await research(ctx(llm=counted), sub("research", "find_fact", query="of the 12,400 objects, on display",
                                                 answer_type="number"))  # fmt: skip
    assert shown.processed_result_data == 3100 and not any("12,400" in o for got in counted.offered for o in got)


async def test_without_scores_the_models_own_reading_picks_the_candidate() -> None:
    for schemas in (True, False):  # its reading as JSON, or as free text
        model = Chooser("1946", scores=False)
        got = await worker("research")(ctx(llm=model, schemas=schemas),
                                       sub("research", "find_fact", query="the museum reopened", answer_type="year"))  # fmt: skip
        assert (got.processed_result_data, got.made_by) == (1946, "model")
    unread = Chooser("in the spring", scores=False)  # a reading that is none of the candidates: retrieval's best
    got = await worker("research")(ctx(llm=unread), sub("research", "find_fact", query="the museum reopened", answer_type="year"))
    assert got.status == "COMPLETED" and got.processed_result_data in (1887, 1902, 1946)


def test_a_step_asks_its_question_by_the_kind_of_answer() -> None:
    assert step_question(FindFact(query="the bridge opened", answer_type="year")) == "In what year: the bridge opened?"
    assert step_question(FindFact(query="x", question="When did the bridge open?")) == "When did the bridge open?"


async def test_a_worker_answers_failed_with_the_reason() -> None:
    research, utility = worker("research"), worker("utility")
    cases = [
        (research(ctx(None), sub("research", "find_fact", query="founded", answer_type="year")), "NotFound", "has not received the run's document"),
        (research(ctx(), sub("research", "find_fact", query="founded", answer_type="colour")), "BadInput", "input answer_type"),
        (research(ctx(), sub("research", "find_fact", query="the museum closed", answer_type="date")), "NotFound", "no date for 'the museum closed'"),
        (research(ctx(), sub("research", "crawl", url="x")), "UnknownTool", "has no tool 'crawl'"),
        (utility(ctx(), sub("research", "calculator", expression="1")), "WrongRole", "role is 'utility'"),
        (utility(ctx(), sub("utility", "calculator", expression="2 ** 5000")), "CalculatorError", "power too large"),
    ]  # fmt: skip
    for call, kind, message in cases:
        result = await call
        assert result.status == "FAILED" and result.error_details is not None, (message, result)
        assert result.error_details.type == kind and message in result.error_details.message, result.error_details
    ok = await utility(ctx(), sub("utility", "calculator", expression="1946 - 1887"))
    assert (ok.status, ok.result_data, ok.processed_result_data) == ("COMPLETED", "59", 59)


def test_number_words_are_read_whole() -> None:
    # "eighty" is not "eight", "fourteen" not "four"; "and" joins only after a scale word
    assert [to_number(s) for s in ("over eighty", "fourteen boats", "one thousand and forty", "two thousand three hundred and ten")] == [
        80, 14, 1040, 2310]  # fmt: skip
    assert to_number("the third and the fourth") is None


def test_the_query_s_words_near_a_span_count_for_it() -> None:
    said = "Ada Venn, who was born in 1822, took charge of the mill after her father drowned in 1856."
    born, charge = Candidate("1822", 0, said), Candidate("1856", 0, said)
    assert nearness(born, "Ada Venn born") > nearness(charge, "Ada Venn born")
    assert nearness(charge, "her father drowned") == 1.0 and nearness(Candidate("1901", 1, "It closed in 1901."), "father drowned") == 0.0
    task = FindFact(query="her father drowned", answer_type="year")
    assert evidence(charge, task) > evidence(Candidate("1901", 1, "It closed in 1901."), task)


async def test_a_summary_is_the_sentences_the_model_chooses_in_the_documents_order() -> None:
    model = Chooser("reopened in 1946")  # retrieval ranks it last of four
    topic = "the museum's glass hall and its objects"
    got = await worker("research")(ctx(llm=model), sub("research", "summarize", topic=topic, sentences=2))
    assert got.status == "COMPLETED" and got.made_by == "model" and got.processed_result_data == 2
    assert len(model.offered[-1]) == 4 and "reopened in 1946" in got.result_data  # the model's choice
    # in the document's order, whatever the model's order
    first, second = got.result_data.split(". ", 1)
    assert DOC.index(first) < DOC.index(second)
    cannot = Chooser("x", scores=False)  # a backend that cannot score: retrieval's best, as the tool's choice
    plain = await worker("research")(ctx(llm=cannot), sub("research", "summarize", topic="glass hall", sentences=1))
    assert plain.result_data.startswith("Its glass hall opened in 1902")
