"""Question forms: other writers' wordings read as the templates' own (invented questions)."""

from __future__ import annotations

import pytest

from gaiamesh.orchestrated.catalog import TOOLS
from gaiamesh.orchestrated.journal import Journal
from gaiamesh.orchestrated.orchestrator import BUNDLED_TEMPLATES, DEFAULT_TEMPLATE, templates
from gaiamesh.orchestrated.planner import PlanManager
from gaiamesh.orchestrated.readings.rephrase import forms, rephrase


@pytest.mark.parametrize(
    ("asked", "reworded"),
    [
        # a unit phrase inside the question or before it moves to its end
        ("What sum, in pounds, did the guild give to the new organ?", "How much did the guild give to the new organ, in pounds?"),
        ("In tonnes, how much coal did the pit raise in 1880?", "How much coal did the pit raise in 1880, in tonnes?"),
        # "what number of", "what was the number of", "what sum", "what part of", "the amount of"
        ("What number of looms were worked by women?", "How many looms were worked by women?"),
        ("What was the number of boats kept at the slipway?", "How many boats kept at the slipway?"),
        ("What part of the cost of the chapel was not met by the bishop?", "How much of the cost of the chapel was not met by the bishop?"),
        ("What was the amount of the legacy?", "How much was the legacy?"),
        ("By what margin did the home side's score exceed the visitors'?", "By how much did the home side's score exceed the visitors'?"),
        # ages
        ("What age was Ada Byrne at the time she won the prize?", "What age was Ada Byrne when she won the prize?"),
        ("What was Ada Byrne's age when the hall burned?", "How old was Ada Byrne when the hall burned?"),
        ("How many years old was Ada Byrne when she married?", "How old was Ada Byrne when she married?"),
        # spans of time asked with "how long"
        ("How long after the fire was the hall rebuilt?", "How many years after the fire was the hall rebuilt?"),
        ("How long before the railway came did the canal close?", "How many years before the railway came did the canal close?"),
        ("For how long was Ada Byrne mayor, in years?", "For how many years was Ada Byrne mayor?"),
        ("How long, in years, was the quarry worked?", "How many years was the quarry worked?"),
        ("How long was the chapel closed?", "How many years was the chapel closed?"),
        # years between two events in other words
        ("How many years separate the two floods?", "How many years passed between the two floods?"),
        ("How much time elapsed between the fire and the reopening?", "How many years elapsed between the fire and the reopening?"),
        ("What was the gap between the first ascent and the second?", "How many years passed between the first ascent and the second?"),
        ("How many years separate the openings of the north pier and the south pier?",
         "How many years passed between the opening of the north pier and the opening of the south pier?"),
        # differences and changes
        ("What is the difference in the number of pupils between the boys' school and the girls' school?",
         "How many more pupils did the boys' school have than the girls' school?"),
        ("What was the increase in membership between 1901 and 1931?", "By how much did membership increase between 1901 and 1931?"),
        ("What was the fall in rents from 1920 to 1935?", "By how much did rents fall from 1920 to 1935?"),
        ("What proportion of the crew, as a percentage, were local men?", "What percentage of the crew were local men?"),
        # a phrase before the question word
        ("Of the mill's hands in 1850, how many were children?", "How many of the mill's hands in 1850 were children?"),
        ("Among the lifeboat's crew, how many were fishermen?", "How many of the lifeboat's crew were fishermen?"),
        ("Compared with 1900, how many more looms did the mill run in 1910?", "How many more looms did the mill run in 1910 than 1900?"),
        ("Counting the choir, how many members does the society have?", "How many members does the society have, counting the choir?"),
        ("In 1901, how many looms did the mill have?", "How many looms did the mill have in 1901?"),  # a year is no unit
        ("In 1890, what percentage of the tenants were farmers?", "What percentage of the tenants were farmers in 1890?"),
        ("In square feet, how much larger was the new hall than the old one?", "How much larger was the new hall than the old one, in square feet?"),
        ("The foundry closed; how many years later was the site cleared?", "How many years after the foundry closed was the site cleared?"),
        ("The Dunlin had how many more berths than the Plover?", "How many more berths did the Dunlin have than the Plover?"),
        # imperatives, word order and other words for a comparison
        ("Calculate the number of years between the two fires.", "How many years between the two fires?"),
        ("Work out how many pupils left in 1920.", "How many pupils left in 1920?"),
        ("How many runs more than his brother did Tom Ayre score?", "How many more runs did Tom Ayre score than his brother?"),
        ("How many berths more did the Dunlin have than the Plover?", "How many more berths did the Dunlin have than the Plover?"),
        ("How many extra seats did the new stand have compared with the old one?", "How many more seats did the new stand have than the old one?"),
        ("How many additional beds did the ward have in 1950?", "How many more beds did the ward have in 1950?"),
        ("How much did the town's rateable value rise from 1880 to 1900?", "By how much did the town's rateable value rise from 1880 to 1900?"),
        ("What did the parish council give to the new roof, in pounds?", "How much did the parish council give to the new roof, in pounds?"),
        ("How long was it between the fire and the rebuilding?", "How many years passed between the fire and the rebuilding?"),
        ("By how many feet was the tower taller than the spire?", "How many feet taller was the tower than the spire?"),
        ("By how much was the river wider than the canal?", "How much wider was the river than the canal?"),
        ("What was the total number of looms in the north mill and the south mill?",
         "How many looms did the north mill and the south mill have in total?"),
        ("What amount of the bridge's cost was met by the county?", "How much of the bridge's cost was met by the county?"),
        # a statement with its question word inside
        ("Ada Byrne was born in which year?", "In which year was Ada Byrne born?"),
        ("The south wing opened how many years after the chapel?", "How many years after the chapel did the south wing open?"),
        ("Tom Ayre played for the county over a span of how many years?", "Over how many years did Tom Ayre play for the county?"),
        ("Ada Byrne was born when?", "When was Ada Byrne born?"),
        ("After the fire, the hall stayed shut for how many years?", "For how many years did the hall stay shut after the fire?"),
        # clauses before the question
        ("When the hall burned, how many years had Ada Byrne been warden?", "How many years had Ada Byrne been warden when the hall burned?"),
        ("Once the new wing was built, how many beds did the ward have?", "How many beds did the ward have after the new wing was built?"),
        ("After the flood, how many years passed before the mill was rebuilt?", "How many years after the flood was the mill rebuilt?"),
        ("How many years separated the first ascent from the second?", "How many years passed between the first ascent and the second?"),
        ("What's the difference between the number of boats in 1900 and in 1950?", "How many more boats did 1900 have than 1950?"),
        ("How many of the boats weren't insured?", "How many of the boats were not insured?"),
        ("How many of the seats can't be booked?", "How many of the seats can not be booked?"),
        # life events and idioms
        ("How many of the miners failed to return to work?", "How many of the miners did not return to work?"),
        ("What was Ada Byrne's year of birth?", "In what year was Ada Byrne born?"),
        ("What was Ada Byrne's age at her retirement?", "How old was Ada Byrne when she retired?"),
        ("How many of the crew lost their lives in the storm?", "How many of the crew died in the storm?"),
        ("When did the Byrne family's ownership come to an end?", "When did the Byrne family's ownership end?"),
        ("How many years did Ada Byrne live after the hall opened?", "How many years after the hall opened did Ada Byrne die?"),
        ("What did the new organ cost in all?", "How much did the new organ cost in all?"),
        ("How old was Ada Byrne when her first novel came out?", "How old was Ada Byrne when her first novel was published?"),
    ],
)  # fmt: skip
def test_other_wordings_are_read_in_the_templates_words(asked: str, reworded: str) -> None:
    assert rephrase(asked) == reworded
    assert forms(asked) == [asked, reworded]


@pytest.mark.parametrize(
    "asked",
    [
        "How long was the pier?",  # a length: no predicate after its subject
        "How long is the main pool, in yards?",  # a length: a unit of length
        "How long are the two runways together, in metres?",
        "How long did the school stay open?",  # read as asked by the templates
        "How long had Ada Byrne been mayor when the hall burned?",
        "In what year did the mill close?",
        "How old was Ada Byrne at the time of the fire?",  # "at the time of": no clause to make "when"
        "What is the sum of the north span and the south span?",  # a sum of two is read as asked
        "Of the two mills, which closed first?",  # "of" before no "how many"
        "Was the mill rebuilt after the fire?",  # a question already, not a statement
        "How many years passed between the opening of the pier and its closure?",  # one noun, one event each
        "How many years passed between the openings of the pier and the closing of the station?",
        "How many of the miners came out on strike in 1893?",  # "came out" of a strike: not published
    ],
)
def test_wordings_the_templates_read_or_that_ask_something_else_are_kept(asked: str) -> None:
    assert rephrase(asked) == asked
    assert forms(asked) == [asked]


async def test_the_planner_reads_a_reworded_question_with_the_template_of_its_own_wording() -> None:
    manager = PlanManager(TOOLS, templates(BUNDLED_TEMPLATES), DEFAULT_TEMPLATE)
    asked = await manager.plan("How long after the fire was the hall rebuilt?", Journal())
    plain = await manager.plan("How many years after the fire was the hall rebuilt?", Journal())
    assert asked.source == plain.source == "template:years_after"
    assert asked.to_json() == plain.to_json()
    # without the rewording no template of the two years reads it
    unread = [
        t.name
        for t in templates(BUNDLED_TEMPLATES)
        if t.match("How long after the fire was the hall rebuilt?")
    ]
    assert "years_after" not in unread and unread[0] == "implied_arithmetic"
