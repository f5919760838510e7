"""The worker tools: the calculator refuses what it must, find_fact reads typed spans,
and a worker answers FAILED (never an error packet) with the reason."""

from __future__ import annotations

from typing import Any

import pytest

from gaiamesh.mesh.frames import DocInit, PacketType, SubTaskPacket, make_packet
from gaiamesh.models.llm import LLMClient, LLMUsage
from gaiamesh.orchestrated.calculator import CalculatorError, calculate, format_number, to_number
from gaiamesh.orchestrated.workers import best_span, rarity, worker
from gaiamesh.pipeline import ToolContext

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


def ctx(doc: str | None = DOC) -> ToolContext:
    llm = LLMClient.ollama("http://127.0.0.1:9", "none")  # never called by these tools
    return ToolContext(llm=llm, usage=LLMUsage(), doc=DocInit(chunks=[doc[i : i + 400] for i in range(0, len(doc), 400)]) if doc else None)


def sub(role: str, tool: str, **inp: Any) -> SubTaskPacket:
    body = {"sub_task_id": "t1", "parent_task_id": "run", "assigned_agent_role": role, "tool_name": tool,
            "sub_task_input": inp}  # fmt: skip
    packet = make_packet(PacketType.SUBTASK, body, run_id="run", src="o", seq=1)
    assert isinstance(packet, SubTaskPacket)
    return packet


async def test_find_fact_reads_the_year_nearest_the_query() -> None:
    research = worker("research")
    founded = await research(ctx(), sub("research", "find_fact", query="the museum was founded", answer_type="year"))
    opened = await research(ctx(), sub("research", "find_fact", query="the glass hall opened", answer_type="year"))
    assert (founded.status, founded.result_data, founded.processed_result_data) == ("COMPLETED", "1887", 1887)
    assert opened.processed_result_data == 1902 and "glass hall" in (opened.evidence or "")
    shown = await research(ctx(), sub("research", "find_fact", query="objects on display", answer_type="number"))
    assert shown.processed_result_data == 3100


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


async def test_derive_reads_an_implied_calculation_or_fails() -> None:
    research = worker("research")
    hidden = await research(ctx(), sub("research", "derive", question="How many of the objects are not on display?"))
    assert (hidden.status, hidden.processed_result_data) == ("COMPLETED", "12400 - 3100")
    assert "3,100 of them" in (hidden.evidence or "")
    plain = await research(ctx(), sub("research", "derive", question="How many objects are on display?"))
    assert plain.status == "FAILED" and plain.error_details is not None
    assert plain.error_details.type == "NotFound" and "implies no calculation" in plain.error_details.message


def test_best_span_prefers_the_count_of_the_asked_thing() -> None:
    sentence = "The line opened in 1899 with 6 miles of track and 14 electric cars."
    assert best_span(sentence, ["6 miles", "14 electric"], "cars the opening", unit="cars") == "14 electric"
    sentence = "In 1913 the boats made 12,000 crossings and carried 612,000 passengers."
    assert best_span(sentence, ["12,000 crossings", "612,000"], "passengers 1913", unit="passengers") == "612,000"


def test_best_span_takes_the_number_of_the_query_year() -> None:
    sentence = "Its fund was 500 pounds in 1900 and 4,000 pounds in 1950; in 2020 it was 120,000 pounds."
    assert best_span(sentence, ["500 pounds", "4,000 pounds", "120,000 pounds"], "the fund in 2020") == "120,000 pounds"


async def test_find_fact_takes_the_subjects_sentence_over_anothers_exact_word() -> None:
    # "died" is said of Ada Lowe; "his death" of Ned Pike, whom the query names: his sentence wins
    doc = "The press was founded by Ada Lowe (1790-1851). Its printer was Ned Pike, who worked there until his death in 1872."
    died = await worker("research")(ctx(doc), sub("research", "find_fact", query="Ned Pike died", answer_type="year"))
    assert died.processed_result_data == 1872, died


def test_best_span_joins_a_dated_phrase_to_the_clause_before_it() -> None:
    sentence = "It won its first cup at Henley, Oxfordshire, in 1902 under the coach Amos Reed, and went on to win the Grand twice between 1911 and 1920."
    assert best_span(sentence, ["1902", "1911", "1920"], "the crew win its first cup at Henley") == "1902"
    # after a semicolon a new statement begins: "in 2020" is not the 1950 clause's
    sentence = "Its prize was 500 pounds in 1900 and 4,000 pounds in 1950; in 2020 it was 120,000 pounds."
    assert best_span(sentence, ["4,000 pounds", "120,000 pounds"], "the prize in 2020") == "120,000 pounds"


async def test_find_fact_for_the_start_of_a_period_passes_over_an_implied_end() -> None:
    doc = (
        "The church tower was rebuilt in 1872. The vicar of the time, the Reverend Ned Vane, who held the living for "
        "30 years from 1850, raised 2,300 pounds for the work, of which he gave 500 pounds himself."
    )
    research = worker("research")
    start = await research(ctx(doc), sub("research", "find_fact", query="Ned Vane held the living", answer_type="year", period="start"))
    assert start.processed_result_data == 1850, start
    anyend = await research(ctx(doc), sub("research", "find_fact", query="Ned Vane held the living", answer_type="year"))
    assert anyend.processed_result_data == 1880  # the implied end ("held the living until 1880") ranks first


def test_best_span_reads_the_querys_verb_by_its_paraphrase() -> None:
    sentence = "His son Ezra, born in 1820, took over in 1851 and ran the forge until his death in 1888."
    assert best_span(sentence, ["1851", "1888"], "Ezra died") == "1888"


def test_best_span_prefers_the_clause_of_the_querys_own_verb() -> None:
    # the survey is named in one clause, the publishing the query dates in the other
    sentence = "From 1901 to 1907 she worked on the survey; the resulting book on the dunes was published in 1910."
    assert best_span(sentence, ["1907", "1910"], "Ada Byrne her survey book was published") == "1910"
    assert best_span(sentence, ["1901", "1907"], "Ada Byrne worked on the survey") in {"1901", "1907"}


def test_best_span_gives_a_clause_without_a_verb_the_verb_before_it() -> None:
    # "and a reading room in 1921": the elided verb is "added"; the reading room's year is 1921
    sentence = "A lecture room was added in 1907 and a reading room in 1921."
    assert best_span(sentence, ["1907", "1921"], "the reading room added") == "1921"
    assert best_span(sentence, ["1907", "1921"], "the lecture room added") == "1907"


def test_best_span_reads_a_year_before_a_noun_as_that_nouns_only() -> None:
    # "the 1872 schoolroom" names which schoolroom; the library opened in 1990
    doc = ["The school opened in 1872.", "The shop opened in 1950.", "The 1872 schoolroom is now a library, opened in 1990 by the mayor."]
    assert best_span(doc[2], ["1872", "1990"], "the library opened", rarity(doc)) == "1990"


async def test_find_fact_reads_a_pronouns_sentence_as_about_the_name_before_it() -> None:
    doc = (
        "The Marlow Rope Company stands beside the canal. It was built in 1851 by the Pell family. "
        "Rope making at the yard ended in 1930, and the Pell family sold the building in 1934."
    )
    built = await worker("research")(ctx(doc), sub("research", "find_fact", query="the Marlow Rope Company was built", answer_type="year"))
    assert built.processed_result_data == 1851


async def test_find_fact_passes_over_a_sentence_of_the_opposite_ordinal() -> None:
    doc = (
        "The Orwell Steam Packet Company ran ferries on the estuary. The company's last sailing was made in 1931. "
        "Its first steamer, the Swift, crossed to Harwich in 1848."
    )
    first = await worker("research")(ctx(doc), sub("research", "find_fact", query="the company's first sailing", answer_type="year"))
    assert first.processed_result_data == 1848


async def test_find_fact_counts_each_query_word_once_with_its_paraphrases() -> None:
    # "spent" and "fund" both stand for "cost": the sentence that says "cost" and names the
    # bridge (through "Its", after "The bridge ...") is the one about the bridge's cost
    doc = (
        "The bridge has nine arches. Its building took four years and cost £9,000. "
        "The Bridge Trust spent £40,000 on repairs, and a heritage fund gave £25,000."
    )
    cost = await worker("research")(ctx(doc), sub("research", "find_fact", query="the cost of the bridge", answer_type="number"))
    assert cost.processed_result_data == 9000


def test_number_words_are_read_whole() -> None:
    # "eighty" is not "eight", "fourteen" not "four"; "and" joins only after a scale word
    assert [to_number(s) for s in ("over eighty", "fourteen boats", "one thousand and forty", "two thousand three hundred and ten")] == [
        80, 14, 1040, 2310]  # fmt: skip
    assert to_number("the third and the fourth") is None


async def test_find_fact_never_counts_a_number_that_names_something() -> None:
    # "Model 4.2" and "Route 66" name things; a number the query states is never its answer
    doc = (
        "The Model 4.2 shipped in 1988 with 640 parts. "
        "The Model 5.1 shipped in 1991. It had about 910 parts, built by over sixty firms."
    )
    parts = await worker("research")(ctx(doc), sub("research", "find_fact", query="the Model 4.2 parts", answer_type="number", unit="parts"))
    assert parts.processed_result_data == 640
    firms = await worker("research")(ctx("Route 66 ran past sixty-two diners and seventy motels."), sub(
        "research", "find_fact", query="Route 66 diners", answer_type="number"))  # fmt: skip
    assert firms.processed_result_data == 62


async def test_find_fact_passes_over_a_sentence_of_another_numbered_name() -> None:
    # "Camp5" is another camp than "Camp2", even where that sentence shares more of the query's words
    doc = (
        "Camp2 was held in Lyon with some ninety scouts. "
        "Camp5 was held in Turin, and over four hundred members took part as participants."
    )
    scouts = await worker("research")(ctx(doc), sub("research", "find_fact", query="Camp2 participants", answer_type="number"))
    assert scouts.processed_result_data == 90


async def test_find_fact_reads_an_agent_noun_by_its_verb() -> None:
    # "became its director" is told by "directed it from 1961", not by another's "our current director"
    doc = "Hilda Brack directed the festival from 1961 until 1975. Tom Ashe was chosen in 2019 and is our current director."
    start = await worker("research")(ctx(doc), sub("research", "find_fact", query="Hilda Brack become its director", answer_type="year"))
    assert start.processed_result_data == 1961


def test_identifiers_are_numbered_names_not_decimals() -> None:
    from gaiamesh.orchestrated.workers import identifiers, with_identifiers

    assert identifiers('Camp2 met after Model 4.2 and version 1.0.3 shipped, as "Model 4.3"') == {
        "camp": {"camp2"}, "model": {"4.2", "4.3"}, ".": {"1.0.3"}}  # fmt: skip
    assert identifiers("It used 2.5 million tiles and ran kernel 2.0") == {}
    # a numbered name stays the topic until another of the same name is told; another name's
    # number ("Engine 6.1") does not displace it
    sents = ["Model 4.2 shipped in 1988.", "It came with Engine 6.1 and Radio 2.0.", "There were 640 parts.", "Model 5.0 shipped.", "It had 700 parts."]
    carried = with_identifiers(sents)
    assert carried[2] == "(2.0 4.2 6.1) There were 640 parts." and carried[4] == "(2.0 5.0 6.1) It had 700 parts."


async def test_find_fact_reads_a_count_told_after_its_numbered_name() -> None:
    doc = (
        "Model 4.2 shipped in 1988. At the time of shipping, there were 1500+ parts made by more than 40 firms. "
        "Model 5.1 shipped in 1991. It was sold in Spain. There were around 2,600 parts."
    )
    parts = await worker("research")(ctx(doc), sub("research", "find_fact", query="Model 4.2 parts", answer_type="number", unit="parts"))
    assert parts.processed_result_data == 1500
    later = await worker("research")(ctx(doc), sub("research", "find_fact", query="Model 5.1 parts", answer_type="number", unit="parts"))
    assert later.processed_result_data == 2600


async def test_find_fact_dates_a_named_persons_birth_only_from_a_birth() -> None:
    # no sentence tells Rhoda Venn's birth: her death year is not one, and the step fails
    doc = "1931: Rhoda Venn died. Rhoda Venn founded the guild in 1904 and led it for twenty years."
    born = await worker("research")(ctx(doc), sub("research", "find_fact", query="Rhoda Venn born", answer_type="year"))
    assert born.status == "FAILED" and "no year" in (born.error_details.message if born.error_details else "")


def test_best_span_reads_a_unit_of_several_words_whole() -> None:
    # "4,100 | red bricks" counts both words of the unit asked for, "900 grey | bricks" one
    sentence = "The store held 4,100 red bricks (made from 900 grey bricks) for the new wing."
    assert best_span(sentence, ["4,100", "900 grey"], "the store red bricks", unit="red bricks") == "4,100"
