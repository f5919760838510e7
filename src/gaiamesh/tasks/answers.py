"""What counts as the same answer: a task's gold answers as a list, and the exact match of a
prediction against them after normalization. The strategies compare their own candidates the
same way the scorers do (``evaluation/scoring.py`` builds its scores on these)."""

from __future__ import annotations

import string
from collections.abc import Sequence

_EDGE = string.punctuation + " "


def normalize(text: str) -> str:
    """Lower-case, strip surrounding whitespace and punctuation, collapse inner whitespace. A
    number's sign survives: "-32" is not "32"."""
    text = " ".join(text.lower().split())
    core = text.strip(_EDGE)
    signed = text.lstrip(_EDGE.replace("-", ""))
    if signed.startswith("-") and signed[1:2].isdigit() and core[:1].isdigit():
        core = "-" + core
    return core


def golds(answers: str | Sequence[str]) -> list[str]:
    """The gold answers as a list (one string is one answer)."""
    return [answers] if isinstance(answers, str) else [a for a in answers if a.strip()] or [""]


def exact_match(prediction: str, answers: str | Sequence[str]) -> int:
    return int(any(normalize(prediction) == normalize(a) for a in golds(answers)))
