"""Answer quality: Exact Match, ROUGE-L, GAIA-style normalized match; pluggable scorers."""

from __future__ import annotations

import re
import string
from collections.abc import Callable

from rouge_score import rouge_scorer

Scorer = Callable[[str, str], dict[str, float]]
"""``scorer(prediction, answer) -> {metric: value}``."""

_PUNCT = str.maketrans("", "", string.punctuation)
_rouge = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)


def normalize(text: str) -> str:
    """Lower-case, strip surrounding whitespace and punctuation, collapse inner whitespace."""
    text = " ".join(text.lower().split())
    return text.strip(string.punctuation + " ")


def exact_match(prediction: str, answer: str) -> int:
    return int(normalize(prediction) == normalize(answer))


def rouge_l(prediction: str, answer: str) -> float:
    """ROUGE-L F-measure. ``rouge-score`` takes ``score(target, prediction)``: order matters."""
    if not prediction.strip() or not answer.strip():
        return 0.0
    return float(_rouge.score(answer, prediction)["rougeL"].fmeasure)


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


def gaia_match(prediction: str, answer: str) -> int:
    """GAIA-style scoring: numbers as numbers (``$ % ,`` stripped), comma/semicolon lists
    element by element, strings without whitespace, punctuation and case."""
    if re.search(r"[,;]", answer) and _as_number(answer) is None:
        truths = [t for t in re.split(r"[,;]", answer)]
        preds = [p for p in re.split(r"[,;]", prediction)]
        if len(truths) != len(preds):
            return 0
        return int(all(_gaia_element(p, t) for p, t in zip(preds, truths, strict=True)))
    return int(_gaia_element(prediction, answer))


def default_scorer(prediction: str, answer: str) -> dict[str, float]:
    """The seed's scores plus GAIA match: ``quality_score = (EM + ROUGE-L) / 2``."""
    em = exact_match(prediction, answer)
    rl = rouge_l(prediction, answer)
    return {
        "quality_score": (em + rl) / 2,
        "exact_match": em,
        "rouge_l": rl,
        "gaia_match": gaia_match(prediction, answer),
    }


def gaia_scorer(prediction: str, answer: str) -> dict[str, float]:
    """GAIA's match as the quality score; the seed's fields are still reported."""
    scores = default_scorer(prediction, answer)
    scores["quality_score"] = float(scores["gaia_match"])
    return scores


SCORERS: dict[str, Scorer] = {"em_rouge": default_scorer, "gaia": gaia_scorer}


def get_scorer(name: str) -> Scorer:
    try:
        return SCORERS[name]
    except KeyError:
        raise ValueError(f"unknown scorer {name!r}; available: {', '.join(sorted(SCORERS))}") from None
