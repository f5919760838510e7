"""Follow-up questions resolved against the conversation's earlier turns (plain calls)."""

from __future__ import annotations

from gaiamesh.mesh.frames import Turn
from gaiamesh.pipeline.followup import resolve

WHO = Turn(question="Who discovered comet 118P/Kestrel?", answer="Ilona Horvath")
WHAT = Turn(question="What is the best-known exhibit of the Veldt Glass Museum?", answer="The Tamsey Chandelier")


def test_person_pronouns_point_at_who_the_last_question_asked_for() -> None:
    assert resolve("Where was she born?", [WHO]) == "Where was Ilona Horvath born?"
    assert resolve("What is her birthplace?", [WHO]) == "What is Ilona Horvath's birthplace?"
    assert resolve("And when did he die?", [WHO]) == "When did Ilona Horvath die?"  # the opener goes


def test_it_points_at_a_named_answer_or_at_what_the_question_was_about() -> None:
    assert resolve("In which year was it made?", [WHAT]) == "In which year was the Tamsey Chandelier made?"
    year = Turn(question="In which year was the Tamsey Chandelier made?", answer="1889")
    # a year is nothing "it" can be: the last question's subject is
    assert resolve("Where is it shown?", [WHAT, year]) == "Where is Tamsey Chandelier shown?"
    founder = Turn(question="And who founded the museum?", answer="Rupert Ashcombe")
    # "the museum" is the Veldt Glass Museum said before; "he" is the founder just named
    assert resolve("Until when was he its director?", [WHAT, year, founder]) == (
        "Until when was Rupert Ashcombe Veldt Glass Museum's director?"
    )


def test_nothing_changes_without_history_or_pronoun_or_referent() -> None:
    assert resolve("Who designed it?", []) == "Who designed it?"
    assert resolve("What is the capacity of the farm?", [WHAT]) == "What is the capacity of the farm?"
    nothing = Turn(question="how many are there?", answer="12")
    assert resolve("Who built it?", [nothing]) == "Who built it?"
