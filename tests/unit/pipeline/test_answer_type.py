import pytest

from gaiamesh.pipeline.answer_type import AnswerType, anchored, expected_type, matches, spans
from gaiamesh.pipeline.text import rank


@pytest.mark.parametrize(
    ("question", "atype"),
    [
        ("In which year was the lighthouse automated?", AnswerType.YEAR),
        ("On what date did the bridge open?", AnswerType.DATE),
        ("When did the mine close?", AnswerType.WHEN),
        ("How many locks are there?", AnswerType.NUMBER),
        ("How high is the dam?", AnswerType.NUMBER),
        ("What was the total cost of the tunnel?", AnswerType.NUMBER),
        ("Who designed the library?", AnswerType.PERSON),
        ("Where did the expedition start?", AnswerType.PLACE),
        ("Which town is it twinned with?", AnswerType.PLACE),
        ("Which apple variety is the orchard famous for?", AnswerType.ANY),
    ],
)
def test_expected_type_from_the_wh_phrase(question: str, atype: AnswerType) -> None:
    assert expected_type(question) is atype


def test_spans_of_each_type() -> None:
    s = "Work began on 2 May 1981, cost $187,000 and employed 1,150 workers under Margit Sundqvist."
    assert spans(s, AnswerType.DATE) == ["2 May 1981"]
    assert spans(s, AnswerType.YEAR) == ["1981"]
    assert spans("It closed in 1921.", AnswerType.DATE) == []  # "what date" wants a day and month
    assert spans("It closed in 1921.", AnswerType.WHEN) == ["1921"]
    assert spans(s, AnswerType.NUMBER) == ["$187,000", "1,150 workers"]  # a bare year is no quantity
    assert spans(s, AnswerType.PERSON) == ["Margit Sundqvist"]  # not "Work", the sentence's start
    canal = "The canal climbs 210 feet through 23 locks, and the seven locks at Hobb's Hill."
    assert spans(canal, AnswerType.NUMBER, "How many locks are there?") == ["210 feet", "23", "seven"]
    assert anchored(canal, AnswerType.NUMBER, "How many locks are there?") == ["23", "seven"]
    assert spans("The Harbour Board met the Mayor.", AnswerType.PERSON, "Who chaired the Harbour Board?") == [
        "Mayor"
    ]


def test_matches() -> None:
    assert matches("Lowenna Pellow", AnswerType.PERSON)
    assert not matches("Jacob's great-great-granddaughter", AnswerType.PERSON)
    assert matches("1921", AnswerType.WHEN) and not matches("1921", AnswerType.DATE)
    assert matches("14 March 1987", AnswerType.DATE) and matches("March 14, 1987", AnswerType.DATE)
    assert matches("forty-four", AnswerType.NUMBER) and not matches("many", AnswerType.NUMBER)
    assert matches("anything", AnswerType.ANY) and not matches(" ", AnswerType.ANY)


def test_ranking_weighs_what_happened_over_the_subjects_name() -> None:
    pool = [
        "The Carnforth Public Library occupies a building paid for by Andrew Carnegie.",
        "The building was designed by the architect Walter Pennington.",
        "The library opened in 1905 with 4,500 books.",
        "A cafe was added in 2017.",
    ]
    assert rank("Who designed the Carnforth Public Library building?", pool)[0][0] == 1
    founded = ["The museum was established in 1977 by Rupert Ashcombe.", "The museum holds 9,000 objects."]
    assert rank("Who founded the museum?", founded)[0][0] == 0  # a paraphrase counts


def test_heuristics_say_what_they_are() -> None:
    """Every function of the heuristics modules says in its docstring that it is a heuristic and
    what it reads (docs/strategies.md lists them with their measured worth)."""
    import inspect

    from gaiamesh.orchestrated import heuristics as orchestrated
    from gaiamesh.pipeline import heuristics as pipeline

    for module in (pipeline, orchestrated):
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if fn.__module__ != module.__name__ or name.startswith("_") or name.endswith("_pattern"):
                continue
            if name == "parts_of_speech":  # a look-up in lemminflect's table, used by split_subject
                continue
            assert (fn.__doc__ or "").startswith("Heuristic ("), f"{module.__name__}.{name}"


def test_number_words_are_a_rule_of_their_own() -> None:
    from gaiamesh.pipeline.heuristics import QUANTITY, quantity_pattern

    s = "The crew of twelve sailed 300 miles."
    assert [m.group("number") for m in QUANTITY.finditer(s)] == ["twelve", "300"]
    assert [m.group("number") for m in quantity_pattern(()).finditer(s)] == ["300"]
