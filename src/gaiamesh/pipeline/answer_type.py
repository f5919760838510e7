"""What kind of answer a question asks for, and the spans of that kind in a sentence.

Classic question answering before the model: a "which year" question is not answered by a
sentence without a year, and "who" wants a name, not a description. ``extract`` uses the type to
rank sentences, ``reason`` to check the model's answers and, where they fail, to offer the typed
spans of the best facts instead. Only wh-words and surface patterns: nothing here knows a task.
The rules that read English (the wh-forms, month names, number words, titles) are heuristics
and live in ``heuristics.py``; this module applies them.
"""

from __future__ import annotations

import re
from enum import StrEnum

from .heuristics import (
    BEFORE_COUNT,
    DATE,
    MONTH,
    NUMBER_WORDS,
    QUANTITY,
    SENTENCE_STARTERS,
    STOPWORDS,
    TITLES,
    TRAILERS,
    YEAR,
    asked_kind,
)
from .text import rank, terms


class AnswerType(StrEnum):
    YEAR = "year"
    DATE = "date"  # "on what date": a day and a month
    WHEN = "when"  # "when": a date or a year
    NUMBER = "number"
    PERSON = "person"
    PLACE = "place"
    ANY = "any"


_YEAR_RE = re.compile(rf"\b{YEAR}\b")
# Names by their capitals (format, not words): "Mara Quist", "Saint-Jean-de-Luz", "Port Vell".
NAME = re.compile(r"\b[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)*")


def expected_type(question: str) -> AnswerType:
    """The answer type a question asks for, from its wh-phrase (a heuristic: ``heuristics.asked_kind``)."""
    return AnswerType(asked_kind(question))


def typed_rank(
    question: str, docs: list[str], atype: AnswerType | None = None, bridge: str = ""
) -> list[tuple[int, float]]:
    """BM25 order, then docs that mention ``bridge`` (a resolved two-fact question's entity)
    first, then docs holding the asked-for kind first: a sentence without a year cannot answer
    "which year". ``atype`` defaults to the question's own type."""
    return prefer(question, docs, rank(question, docs), atype, bridge)


def prefer(
    question: str, docs: list[str], ranked: list[tuple[int, float]], atype: AnswerType | None = None,
    bridge: str = "",
) -> list[tuple[int, float]]:  # fmt: skip
    """``ranked`` re-sorted (stably) so that docs mentioning ``bridge`` come first, then docs
    holding a span of the asked-for type."""
    atype = expected_type(question) if atype is None else atype
    ranked = list(ranked)
    if bridge:
        about = set(terms(bridge))
        ranked.sort(key=lambda r: not about & set(terms(docs[r[0]])))
    if atype is not AnswerType.ANY:
        ranked.sort(key=lambda r: not spans(docs[r[0]], atype, question))  # stable: BM25 within
    return ranked


def valid(answer: str, facts: list[str], question: str) -> bool:
    """Supported by the facts (its words occur there), and saying more than the question says."""
    words = set(terms(answer))
    return bool(words) and words <= set(terms(" ".join(facts))) and not words <= set(terms(question))


def matches(answer: str, atype: AnswerType) -> bool:
    """Whether ``answer`` has the form ``atype`` asks for (ANY: anything non-empty)."""
    a = answer.strip()
    if not a:
        return False
    if atype is AnswerType.YEAR:
        return bool(_YEAR_RE.search(a))
    if atype is AnswerType.DATE:
        return bool(DATE.search(a))
    if atype is AnswerType.WHEN:
        return bool(DATE.search(a) or _YEAR_RE.search(a))
    if atype is AnswerType.NUMBER:
        return bool(re.search(r"\d", a)) or any(w in NUMBER_WORDS for w in re.findall(r"[a-z]+", a.lower()))
    if atype in (AnswerType.PERSON, AnswerType.PLACE):
        names = NAME.fullmatch(a.rstrip(".")) is not None
        return names and not re.search(r"\d", a)
    return True


def spans(sentence: str, atype: AnswerType, question: str = "") -> list[str]:
    """Spans of ``sentence`` of type ``atype`` that the question does not already contain."""
    qterms = set(terms(question))
    out: list[str] = []
    if atype is AnswerType.DATE:
        out = [m.group(0) for m in DATE.finditer(sentence)]
    elif atype is AnswerType.WHEN:
        out = [m.group(0) for m in DATE.finditer(sentence)] or _YEAR_RE.findall(sentence)
    elif atype is AnswerType.YEAR:
        out = _YEAR_RE.findall(sentence)
    elif atype is AnswerType.NUMBER:
        out = [text for text, _ in _quantities(sentence, question)]
    elif atype in (AnswerType.PERSON, AnswerType.PLACE):
        for m in NAME.finditer(sentence):
            words = m.group(0).split()
            if m.start() == 0 and len(words) == 1:
                continue  # a capitalised first word is just the start of the sentence
            while words and words[0].lower().strip(".") in TITLES | SENTENCE_STARTERS:
                words.pop(0)
            text = " ".join(words)
            if re.fullmatch(MONTH, text):
                continue  # "May" in "2 May 1981" is no name
            if text and not set(terms(text)) <= qterms:
                out.append(text)
    return [s.strip(" ,;") for s in out if s.strip(" ,;")]


_BEFORE_COUNT = STOPWORDS | BEFORE_COUNT


def names_number(sentence: str, start: int) -> bool:
    """Whether the number at ``start`` is part of a name or a date, not a count: it follows a
    capitalised word ("Model 4.2", "Route 66", "Flight 409", "June 5"), unless that word only
    opens the sentence ("Over 300 ships ...", "Of 40 crew ...")."""
    before = re.search(r"\b([A-Z][\w'-]*)\s+$", sentence[:start])
    if not before:
        return False
    opens = not sentence[: before.start()].strip()
    return not (opens and before.group(1).lower() in _BEFORE_COUNT)


def _quantities(sentence: str, question: str) -> list[tuple[str, bool]]:
    """Quantities in ``sentence``, each with whether a question word follows it as its unit
    or measure ("160 species" for "how many species", "31 metres high" for "how high")."""
    qterms = set(terms(question))
    out: list[tuple[str, bool]] = []
    dates = [m.span() for m in DATE.finditer(sentence)]
    for m in QUANTITY.finditer(sentence):
        if any(a < m.end() and m.start() < b for a, b in dates):
            continue  # "2 May 1981" is a date, not two quantities
        if names_number(sentence, m.start()):
            continue  # "Model 4.2 had 640 parts": 4.2 names the model
        words = m.group(0).split()
        first = len(m.group("number").split())  # the unit's words start after the number's own
        # The unit ends at the first function word, unless the question asked with it ("how high").
        for k, w in enumerate(words[first:], start=first):
            if w.lower() in _TRAILERS and not set(terms(w)) & qterms:
                words = words[:k]
                break
        anchored = False
        # Drop trailing words that are not units: "23 locks" for "how many locks" is "23".
        while len(words) > first and (words[-1].lower() in _TRAILERS or set(terms(words[-1])) <= qterms):
            anchored = anchored or bool(set(terms(words[-1])) & qterms)
            words.pop()
        text = " ".join(words).rstrip(",;:")  # "in 1897, when ...": the comma is not the number's
        if _YEAR_RE.fullmatch(text):
            continue  # a bare year is a date, not a quantity
        out.append((text, anchored))
    return out


def anchored(sentence: str, atype: AnswerType, question: str) -> list[str]:
    """The quantities the question names by their unit: direct evidence, stronger than a reading."""
    if atype is not AnswerType.NUMBER:
        return []
    return [text for text, anchor in _quantities(sentence, question) if anchor]


# Words a quantity span may end on that are not its unit.
_TRAILERS = STOPWORDS | TRAILERS
