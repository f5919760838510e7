"""Question forms: a question reworded into the forms the plan templates read.

The templates read one wording of each kind of question ("how many years after X did Y",
"how old was X when Y", "how much did X raise"). Other writers ask the same things in other
words ("how long after X did Y", "what age was X at the time Y", "what sum did X raise"). This
module rewrites those common English variants of question syntax into the templates' wording;
it knows nothing about any document or task. The planner tries the templates on the question
as asked first, then on its rewording.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from lemminflect import getLemma

from .phrases import split_subject

Rewrite = tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]

# Units a question may name for its number; a length unit makes "how long" a length, not a time.
_LENGTH_UNITS = (
    r"(?:yards?|feet|foot|metres?|meters?|miles?|kilometres?|kilometers?|inches|inch|chains?|furlongs?)"
)
_TIME_WORDS = re.compile(r"\b(?:after|before|since|until|till|later|earlier)\b", re.IGNORECASE)
_COPULA = r"(?:is|are|was|were|has|have|had|do|does|did)"


_VERB_OF = {
    "increase": "increase",
    "rise": "rise",
    "growth": "grow",
    "fall": "fall",
    "drop": "drop",
    "decline": "decline",
    "decrease": "decrease",
    "change": "change",
}


def _unit_to_end(m: re.Match[str]) -> str:
    # "What sum, in pounds, did X raise?" -> "What sum did X raise, in pounds?"
    return f"{m.group('head')} {m.group('rest')}, in {m.group('unit')}"


def _leading_unit(m: re.Match[str]) -> str:
    # "In tons, what was ...?" -> "What was ..., in tons?"
    rest = m.group("rest")
    return f"{rest[:1].upper()}{rest[1:]}, in {m.group('unit')}"


def _each_of(m: re.Match[str]) -> str:
    # "between the releases of A and B" -> "between the release of A and the release of B"
    noun, b = m.group("noun"), m.group("b")
    if re.match(r"(?:its|their|his|her)\b|the \w+ of\b", b, re.IGNORECASE):
        return m.group(0)  # "the openings of A and the closing of B": each already has its own
    lemma = getLemma(noun.lower(), upos="NOUN")
    single = lemma[0] if lemma else noun
    if single.lower() == noun.lower():
        return m.group(0)  # not a plural: "the opening of A and B" is one event of both
    return f"between the {single} of {m.group('a')} and the {single} of {b}"


# In order; each applies to the result of the ones before it.
REWRITES: list[Rewrite] = [
    # a unit phrase inside the question or before it goes to its end, where the templates read it
    (
        re.compile(
            r"^(?P<head>.+?),\s*in (?P<unit>(?!what\b|which\b)[a-z][a-z ]*?),\s*(?P<rest>.+?)$", re.IGNORECASE
        ),
        _unit_to_end,
    ),
    (
        re.compile(r"^in (?P<unit>(?!what\b|which\b)[a-z][a-z ]*?),\s*(?P<rest>.+?)$", re.IGNORECASE),
        _leading_unit,
    ),
    # "what number of X", "what was the number of X" -> "how many X"
    (re.compile(r"\bwhat (?:(?:is|was|were|are) the )?(?:total )?number of\b", re.IGNORECASE), "how many"),
    # "what sum / amount did X raise" -> "how much did X raise"; "what part of X" -> "how much of X"
    (re.compile(rf"\bwhat (?:sum|amount)(?: of money)? (?={_COPULA}\b)", re.IGNORECASE), "how much "),
    (re.compile(r"\bwhat (?:is|was) the (?:sum|amount) of\b", re.IGNORECASE), "how much was"),
    (re.compile(r"\bwhat (?:part|portion) of\b", re.IGNORECASE), "how much of"),
    # "by what amount did A exceed B" -> "by how much did A exceed B"
    (re.compile(r"\bby what (?:number|amount|margin|sum)\b", re.IGNORECASE), "by how much"),
    # "what proportion of X, as a percentage, ..." -> "what percentage of X ..."
    (
        re.compile(
            r"\bwhat (?:proportion|share|fraction) of\b(?=.*\b(?:per ?cent|percentage)\b)", re.IGNORECASE
        ),
        "what percentage of",
    ),
    (re.compile(r",?\s*(?:as|in) (?:a )?(?:percentage|per ?cent)\b,?", re.IGNORECASE), ""),
    # "what was X's age when Y", "how many years old was X when Y" -> "how old was X when Y"
    (
        re.compile(
            r"\bwhat (?:was|is|were) (?P<who>.+?)(?:'s|’s) age (?=when\b|at the time\b)", re.IGNORECASE
        ),
        r"how old was \g<who> ",
    ),
    (re.compile(r"\bhow many years old\b", re.IGNORECASE), "how old"),
    # "what was the increase in X between A and B" -> "by how much did X increase between A and B"
    (
        re.compile(
            r"\bwhat (?:is|was) the (?P<change>increase|rise|growth|fall|drop|decline|decrease|change) in (?P<what>.+?) (?P<prep>between|from) ",
            re.IGNORECASE,
        ),
        lambda m: (
            f"by how much did {m.group('what')} {_VERB_OF[m.group('change').lower()]} {m.group('prep')} "
        ),
    ),
    # "at the time he proposed it" -> "when he proposed it" (not "at the time of the war")
    (re.compile(r"\bat the time (?:that |when )?(?!of\b)", re.IGNORECASE), "when "),
    # time spans asked with "how long"
    (re.compile(r"\bfor how long\b", re.IGNORECASE), "for how many years"),
    (re.compile(r"\bhow long (?=after\b|before\b)", re.IGNORECASE), "how many years "),
    # "how many years separate A and B", "how much time passed between A and B"
    (
        re.compile(r"\bhow many years (?:separated?|lie|lay) (?!between\b)", re.IGNORECASE),
        "how many years passed between ",
    ),
    (
        re.compile(
            r"\bhow (?:much time|many years) (passed|elapsed|went by|separated|lay) between\b", re.IGNORECASE
        ),
        r"how many years \1 between",
    ),
    (
        re.compile(
            r"\bwhat (?:is|was) the (?:gap|interval|span of time|time span|length of time|time)(?: in years)? between\b",
            re.IGNORECASE,
        ),
        "how many years passed between",
    ),
    (
        re.compile(r"\bbetween the (?P<noun>[a-z]+) of (?P<a>.+?) and (?P<b>.+?)(?=[,?]|$)", re.IGNORECASE),
        _each_of,
    ),
    # "what is the difference in (the number of) X between A and B" -> "how many more X did A have than B"
    (
        re.compile(
            r"\bwhat (?:is|was) the difference in (?:the )?(?:number of )?(?P<what>[\w -]+?) between (?P<a>.+?) and (?P<b>.+?)(?=[,?]|$)",
            re.IGNORECASE,
        ),
        r"how many more \g<what> did \g<a> have than \g<b>",
    ),
]


def _years_not_length(question: str) -> str:
    """ "How long was X closed, in years?" -> "How many years was X closed?": a "how long" that
    asks for a time (a unit of years, or a past state with a predicate after its subject)."""
    m = re.search(
        rf"\bhow long (?P<verb>{_COPULA}) (?P<rest>.+?)(?P<unit>,\s*in (?P<name>[a-z ]+))?\??$",
        question,
        re.IGNORECASE,
    )
    if m is None:
        return question
    unit = (m.group("name") or "").strip().lower()
    if unit and unit not in {"years", "year"}:
        return question  # "how long is the pool, in yards": a length
    if not unit:
        if re.search(_LENGTH_UNITS, question, re.IGNORECASE) or m.group("verb").lower() in {"is", "are"}:
            return question
        if m.group("verb").lower() in {"was", "were"} and split_subject(m.group("rest")) is None:
            return question  # "how long was the pier": no predicate, a length
    if (
        m.group("verb").lower() in {"do", "does", "did", "has", "have", "had"}
        and not unit
        and not _TIME_WORDS.search(question)
    ):
        return question  # "how long did X run": the templates read it as asked
    head = question[: m.start()]
    return f"{head}how many years {m.group('verb')} {m.group('rest')}?"


def rephrase(question: str) -> str:
    """``question`` in the wording the templates read (the question itself when no form
    applies)."""
    text = " ".join(question.split()).rstrip("?").strip()
    for pattern, replacement in REWRITES:
        text = pattern.sub(replacement, text)
    text = _years_not_length(text).rstrip("?").strip()
    if re.search(r"\bhow many years\b", text, re.IGNORECASE):
        text = re.sub(r",\s*in years$", "", text, flags=re.IGNORECASE)
    if text and text[0].islower():
        text = text[0].upper() + text[1:]
    return f"{text}?"


def forms(question: str) -> list[str]:
    """The question as asked, then its rewording where that differs."""
    again = rephrase(question)
    asked = " ".join(question.split())
    return [asked] if again.rstrip("?") == asked.rstrip("?") else [asked, again]
