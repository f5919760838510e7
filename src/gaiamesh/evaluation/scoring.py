"""Answer quality: Exact Match, ROUGE-L, GAIA-style normalized match, SQuAD's normalized EM and
token F1; pluggable scorers. A task may have several gold answers: each score is the best over
them (as SQuAD's and HotpotQA's evaluation scripts take it)."""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Sequence

from rouge_score import rouge_scorer

from ..errors import ConfigError
from ..tasks.answers import exact_match, golds
from .metrics import Scores

Scorer = Callable[[str, str | Sequence[str]], Scores]
"""``scorer(prediction, gold answer or answers) -> Scores``."""

_PUNCT = str.maketrans("", "", string.punctuation)
_rouge = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def squad_normalize(text: str) -> str:
    """SQuAD's answer normalization: lower case, no punctuation, no articles, single spaces."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCT)).split())


def squad_f1(prediction: str, answers: str | Sequence[str]) -> float:
    """SQuAD's token F1, the best over the gold answers."""
    best = 0.0
    pred = squad_normalize(prediction).split()
    for gold in golds(answers):
        truth = squad_normalize(gold).split()
        if not pred or not truth:
            best = max(best, float(pred == truth))
            continue
        common = sum((Counter(pred) & Counter(truth)).values())
        if common:
            precision, recall = common / len(pred), common / len(truth)
            best = max(best, 2 * precision * recall / (precision + recall))
    return best


def squad_em(prediction: str, answers: str | Sequence[str]) -> int:
    """SQuAD's exact match after its normalization, the best over the gold answers."""
    return int(any(squad_normalize(prediction) == squad_normalize(g) for g in golds(answers)))


def rouge_l(prediction: str, answers: str | Sequence[str]) -> float:
    """ROUGE-L F-measure. ``rouge-score`` takes ``score(target, prediction)``: order matters."""
    if not prediction.strip():
        return 0.0
    return max(
        (float(_rouge.score(a, prediction)["rougeL"].fmeasure) for a in golds(answers) if a.strip()), default=0.0
    )


def _as_number(text: str) -> float | None:
    cleaned = text.strip().replace("$", "").replace("%", "").replace(",", "").strip()
    try:
        return float(cleaned)
    except ValueError:
        return None


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text.lower().translate(_PUNCT))


def _gaia_element(prediction: str, answer: str) -> bool:
    truth = _as_number(answer)
    if truth is not None:
        pred = _as_number(prediction)
        return pred is not None and abs(pred - truth) <= 1e-9 * max(1.0, abs(truth))
    return _squash(prediction) == _squash(answer)


def gaia_match(prediction: str, answers: str | Sequence[str]) -> int:
    """GAIA-style scoring: numbers as numbers (``$ % ,`` stripped), comma/semicolon lists
    element by element, strings without whitespace, punctuation and case."""
    return int(any(_gaia_one(prediction, a) for a in golds(answers)))


def _gaia_one(prediction: str, answer: str) -> int:
    if re.search(r"[,;]", answer) and _as_number(answer) is None:
        truths = [t for t in re.split(r"[,;]", answer)]
        preds = [p for p in re.split(r"[,;]", prediction)]
        if len(truths) != len(preds):
            return 0
        return int(all(_gaia_element(p, t) for p, t in zip(preds, truths, strict=True)))
    return int(_gaia_element(prediction, answer))


def default_scorer(prediction: str, answers: str | Sequence[str]) -> Scores:
    """The seed's scores plus GAIA match and SQuAD's EM and F1: ``quality_score = (EM + ROUGE-L) / 2``."""
    em = exact_match(prediction, answers)
    rl = rouge_l(prediction, answers)
    return Scores(
        quality_score=(em + rl) / 2,
        exact_match=em,
        rouge_l=rl,
        gaia_match=gaia_match(prediction, answers),
        squad_em=squad_em(prediction, answers),
        squad_f1=squad_f1(prediction, answers),
    )


def gaia_scorer(prediction: str, answers: str | Sequence[str]) -> Scores:
    """GAIA's match as the quality score; the other fields are still reported."""
    scores = default_scorer(prediction, answers)
    return scores.model_copy(update={"quality_score": float(scores.gaia_match or 0)})


def squad_scorer(prediction: str, answers: str | Sequence[str]) -> Scores:
    """SQuAD's token F1 as the quality score; the other fields are still reported."""
    scores = default_scorer(prediction, answers)
    return scores.model_copy(update={"quality_score": scores.squad_f1})


SCORERS: dict[str, Scorer] = {"em_rouge": default_scorer, "gaia": gaia_scorer, "squad": squad_scorer}


def score(name: str, prediction: str, answers: Sequence[str]) -> Scores:
    """The scores of ``prediction`` by the scorer ``name``; none at all when there is no gold
    answer (an unscored run, not a wrong one). A run that ended without an answer scores 0."""
    if not any(a.strip() for a in answers):
        return Scores()
    return get_scorer(name)(prediction, [a for a in answers if a.strip()])


def get_scorer(name: str) -> Scorer:
    try:
        return SCORERS[name]
    except KeyError:
        raise ConfigError(f"unknown scorer {name!r}; available: {', '.join(sorted(SCORERS))}") from None
