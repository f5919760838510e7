import pytest

from gaiamesh.evaluation.scoring import (
    default_scorer,
    gaia_match,
    get_scorer,
    rouge_l,
    squad_em,
    squad_f1,
)


def test_rouge_l_argument_order_and_range() -> None:
    assert rouge_l("148 megawatts", "148 megawatts") == pytest.approx(1.0)
    # precision 1, recall 1/2 -> F = 2/3 (the target is the longer string)
    assert rouge_l("Ellery", "Port Ellery") == pytest.approx(2 / 3)
    assert rouge_l("", "x") == 0.0


def test_quality_score_is_mean_of_em_and_rouge() -> None:
    s = default_scorer("Dr. Rupert Ashcombe", "Rupert Ashcombe")
    assert s.exact_match == 0
    assert s.quality_score == pytest.approx((0 + s.rouge_l) / 2)
    assert default_scorer("Kelmscar", "kelmscar").quality_score == 1.0


@pytest.mark.parametrize(
    ("pred", "truth", "expected"),
    [
        ("$37,500", "37500", 1),
        ("37,500", "37500.0", 1),
        ("12%", "12", 1),
        ("12.5", "12", 0),
        ("apples, pears; plums", "Apples,pears,plums", 1),
        ("apples, plums", "apples, pears", 0),
        ("apples", "apples, pears", 0),
        ("Saint Clair de Maurienne", "Saint-Clair-de-Maurienne", 1),
        ("Port-Ellery", "port ellery", 1),
        ("seven", "7", 0),
    ],
)
def test_gaia_match(pred: str, truth: str, expected: int) -> None:
    assert gaia_match(pred, truth) == expected


def test_scorer_registry() -> None:
    assert get_scorer("gaia")("37,500", "37500").quality_score == 1.0
    with pytest.raises(ValueError, match="unknown scorer"):
        get_scorer("bleu")


@pytest.mark.parametrize(
    ("pred", "golds", "em", "f1"),
    [
        ("The Eiffel Tower", ["Eiffel Tower"], 1, 1.0),  # articles and case do not count
        ("in Paris, France", ["Paris"], 0, 0.5),  # precision 1/3 ("in" and "france" are extra), recall 1
        ("Paris", ["Lyon", "paris."], 1, 1.0),  # the best over several golds
        ("1,200 tons", ["1200 tons"], 1, 1.0),  # SQuAD drops punctuation inside tokens too
        ("", ["x"], 0, 0.0),
    ],
)
def test_squad_em_and_f1_take_the_best_gold(pred: str, golds: list[str], em: int, f1: float) -> None:
    assert squad_em(pred, golds) == em
    assert squad_f1(pred, golds) == pytest.approx(f1)


def test_every_score_takes_the_best_of_several_golds() -> None:
    s = default_scorer("Port Ellery", ["Ellery Harbour", "Port Ellery"])
    assert (s.exact_match, s.rouge_l, s.gaia_match, s.squad_em, s.squad_f1) == (1, 1.0, 1, 1, 1.0)
    assert get_scorer("squad")("in Paris", "Paris").quality_score == pytest.approx(2 / 3)
