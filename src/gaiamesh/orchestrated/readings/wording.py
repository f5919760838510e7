"""Numbers, years and clauses as the orchestrated strategy's readings see them: which numbers
count something ("1,250 members", "twelve of them"; not years, ages or lengths of time), where a
clause ends, what a word can be. Pure functions: no I/O, no model."""

from __future__ import annotations

import re
from dataclasses import dataclass

from lemminflect import getAllLemmas

from ...pipeline.answer_type import names_number
from ...pipeline.text import terms
from ..calculator import to_number
from .phrases import parts_of_speech

_WORDS = (
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety"
)
NUM = rf"(?:\d{{1,3}}(?:,\d{{3}})+|\d+)(?:\.\d+)?(?:\s(?:thousand|million|billion))?|(?:{_WORDS.replace(' ', '|')})(?:-(?:{_WORDS.replace(' ', '|')}))?"
NUMBER = re.compile(rf"(?<![\w.,])(?:[$£€]\s?)?(?i:{NUM})(?![\w])")
YEAR = re.compile(r"(?<![\w,.])(?:1[0-9]{3}|20[0-9]{2})(?!\w|[,.]\d)")
# Where one clause ends and the next begins, inside a sentence.
CLAUSE_END = re.compile(r",\s+|;\s+|\s+(?:and|but|while|whereas)\s+")
# "for 41 years": a length of time, not a count of things.
DURATION = re.compile(r"[ -](?:years?|months?|weeks?|days?|hours?|decades?|centuries)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Count:
    """A number that counts something, where it stands in its sentence, and its clause."""

    value: float
    start: int
    end: int
    clause: str  # the clause of the sentence the number stands in


def value_of(text: str) -> float | None:
    """The number ``text`` says ("1,250", "twelve", "2.5 million"), or None."""
    v = to_number(text)
    return None if v is None else float(v)


def num_text(v: float) -> str:
    """``v`` written for the calculator: whole numbers without a decimal point."""
    return str(int(v)) if float(v).is_integer() else str(v)


def clause_bounds(sentence: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each clause of ``sentence`` (split at commas, semicolons, "and", ...)."""
    bounds, start = [], 0
    for m in CLAUSE_END.finditer(sentence):
        bounds.append((start, m.start()))
        start = m.end()
    bounds.append((start, len(sentence)))
    return bounds


# "then 35," "aged 35," "at the age of 35,": what stands before an age
AGE_BEFORE = re.compile(r"\b(?:then|aged|age of)\s+$", re.IGNORECASE)


def counts(sentence: str) -> list[Count]:
    """The numbers of ``sentence`` that count something: not years, not ages or dates."""
    out = []
    for m in NUMBER.finditer(sentence):
        counted = re.match(r"\s+[a-z]+s\b", sentence[m.end() :])  # "of the 2000 members": a count
        if (YEAR.fullmatch(m.group(0)) and not counted) or DURATION.match(sentence, m.end()):
            continue
        value = value_of(m.group(0))
        if value is None or names_number(sentence, m.start()):
            continue  # "Route 66" names a road, it counts nothing
        if AGE_BEFORE.search(sentence, 0, m.start()) and re.match(r"\s*(?:[,;.)]|years? old\b)", sentence[m.end() :]):
            continue  # "Ann Pell, then 35, raised £900": an age
        a, b = clause_at(sentence, m.start())
        out.append(Count(value, m.start(), m.end(), sentence[a:b]))
    return out


def is_verb(word: str) -> bool:
    """Whether ``word`` can be a verb."""
    return "VERB" in parts_of_speech(word)


def overlap(a: str, b: str) -> int:
    """How many content terms ``a`` and ``b`` share."""
    return len(set(terms(a)) & set(terms(b)))


def unit_after(sentence: str, end: int) -> str:
    """The word a count counts ("16 acres" -> "acres")."""
    following = re.match(r"\s+([a-z]+)", sentence[end:])
    return following.group(1) if following else ""


def inflected_verb(word: str, *, ing: bool = True, present: bool = True) -> bool:
    """Whether ``word`` is a form of a verb other than its lemma ("died", "held", "stands"): a
    clause that opens with one shares the subject before it. ``ing=False`` leaves out -ing forms
    (as often nouns: "a reading room"), ``present=False`` the third person ("stands")."""
    w = word.lower()
    lemmas = getAllLemmas(w).get("VERB", ())
    if not lemmas or w in lemmas:
        return False
    return (ing or not w.endswith("ing")) and (present or not w.endswith("s"))


def lemmas_of(word: str) -> set[str]:
    """Every lemma ``word`` can have, of any part of speech."""
    return {lemma for forms in getAllLemmas(word.lower().strip(",.;:?!'\"")).values() for lemma in forms}


def years_in(text: str) -> list[int]:
    """The years ``text`` names, in order."""
    return [int(y) for y in YEAR.findall(text)]


def clause_at(s: str, at: int) -> tuple[int, int]:
    """``(start, end)`` of the clause of ``s`` that holds position ``at``."""
    return next(((a, b) for a, b in clause_bounds(s) if a <= at < b + 1), (0, len(s)))
