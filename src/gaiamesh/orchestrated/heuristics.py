"""The orchestrated team's heuristics: every hand-written rule of the team that reads English.

A heuristic is a word list or pattern that recognises English words or phrasings and decides
something from them: where a clause's subject ends, what "it" or "its last" stands for in a
template's slot, the scale and unit a question asks its number in, the value of a number
written in words. What the model decides (each fact's reading, a summary's sentences, a plan
where ``MODEL_PLANS`` is on) is in ``reading.py`` and ``planner.py``.

The templates' patterns (``templates/*.json``) are heuristics too: each is an English question
form, applied by ``plan_templates.py`` (``Template.match``); they stay data, one file per plan shape. Each
rule here and each template is listed with its measured worth in docs/strategies.md
("Heuristics"); the measurement is docs/results/2026-11-27-heuristics.md.
"""

from __future__ import annotations

import re

from lemminflect import getAllLemmas

# Closed classes: words that open or link noun phrases, never the predicate's verb.
FUNCTION_WORDS = frozenset(
    "a an the this that these those its their his her our your my all both each every some any "
    "no of in on at by for from to with into during per among between".split()
)


def parts_of_speech(word: str) -> frozenset[str]:
    """The parts of speech ``word`` can have ("VERB", "NOUN", ...), punctuation ignored."""
    return frozenset(getAllLemmas(word.lower().strip(",.;:!?'\"")))


def split_subject(clause: str) -> tuple[str, str] | None:
    """Heuristic (English noun phrases, lemminflect's parts of speech): ``(subject, predicate)``
    of ``clause``, or None when no word can start the predicate. The subject ends before the
    first word that can be a verb, except a word right after a determiner or preposition ("the
    light ..."), a noun before a word that can only be a noun ("rail passengers"), a
    capitalised word, and a verb inside a reduced relative clause ("the land Ada bought was
    woodland"). Decides whom "it" stands for in a template's slot (``PRONOUN_START``)."""
    words = clause.split()
    for i in range(1, len(words)):
        pos = parts_of_speech(words[i])
        # after a function word or a possessive ("the restoration's cost") comes a noun
        if "VERB" not in pos or words[i - 1].lower() in FUNCTION_WORDS or words[i - 1].endswith(("'s", "’s", "s'")):
            continue
        following = parts_of_speech(words[i + 1]) if i + 1 < len(words) else frozenset()
        # (a function word is no noun, whatever the lemma table says: "win its first")
        if "NOUN" in pos and following == {"NOUN"} and words[i + 1].lower() not in FUNCTION_WORDS:
            continue  # "rail passengers": a compound noun, not a verb and its object
        if words[i][:1].isupper():
            continue  # a capitalised word inside a clause is a name's ("the Harrow Club voted")
        if _reduced_relative(words[:i]) and "VERB" in following:
            continue  # "the land Ada bought was woodland": a relative clause inside the subject
        return " ".join(words[:i]), " ".join(words[i:])
    return None


def _reduced_relative(words: list[str]) -> bool:
    """Whether ``words`` end in a relative clause's subject with no "that" before it: a common
    noun, then a name or a personal pronoun ("the money | Ada Byrne", "the boats | she")."""
    k = len(words)
    while k > 1 and words[k - 1][:1].isupper():
        k -= 1  # back over the name
    if k == len(words) and words[-1].lower() in {"he", "she", "they", "we", "i", "you"}:
        k -= 1
    if k == len(words) or k < 1:
        return False
    before = words[k - 1]
    return before.islower() and before not in FUNCTION_WORDS and "NOUN" in parts_of_speech(before)


# "in millions", "how many million passengers"
_SCALE = re.compile(r"\b(?:in|how many|how much) (?:(thousand|million|billion)s?\b)", re.IGNORECASE)
_SCALES = {"thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
_UNIT_TAIL = re.compile(r",\s*in\s+[\w ]+$")


def answer_scale(question: str) -> int:
    """Heuristic (English scale words after "in", "how many"): the scale the question wants its
    number in: "in million cubic metres" -> 1,000,000. Decides that the plan's final
    calculation is divided by it."""
    m = _SCALE.search(question)
    return _SCALES[m.group(1).lower()] if m else 1


def unit_tail(question: str) -> str:
    """Heuristic (", in <unit>" at the question's end): the unit the question asks its number
    in (", in metres" -> "metres"; scale words aside), given to the plan's number look-ups."""
    m = _UNIT_TAIL.search(question.strip().rstrip("?").strip())
    if m is None:
        return ""
    words = m.group(0).split()[2:]
    return " ".join(w for w in words if w.lower().rstrip("s") not in {"thousand", "million", "billion", "of"})


def drop_unit(slot: str) -> str:
    """Heuristic (", in <unit>"): a slot without the unit phrase the question appended to it
    (", in tonnes")."""
    return _UNIT_TAIL.sub("", slot).strip()


ORDINAL = re.compile(r"\b(?:first|last|second|third|earliest|latest|final|next|previous)\b", re.IGNORECASE)
"""Heuristic (English ordinals): the word that tells two events of one kind apart ("the
society's first show and its last")."""
ELLIPSIS = re.compile(rf"(?:its|their|his|her|the)\s+({ORDINAL.pattern})", re.IGNORECASE)
"""Heuristic (a possessive and an ordinal alone): a slot that leaves its noun out ("its last"),
filled from the other slot's noun phrase with its own ordinal ("the society's last show")."""
PRONOUN_START = re.compile(r"^(?:it|they|he|she)\s+", re.IGNORECASE)
"""Heuristic (English subject pronouns): a slot that opens with one ("it opened") is about the
other slot's subject ("how many years after it opened did the airport ...")."""
ARTICLES = frozenset({"the", "a", "an"})
"""Heuristic (English articles): a subject that opens with one names something, as a
capitalised subject does, and may stand for a slot's pronoun."""

# Number words and their values: "twelve" is 12, "forty-two" 42, "2.5 million" 2,500,000.
NUMBER_VALUES = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty".split()
    )
} | {"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "dozen": 12}
"""Heuristic (English number words): the value of a number written in words, for the
calculator's operands and a fact's value (``calculator.to_number``)."""
SCALE_VALUES = {"hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
"""Heuristic (English scale words): "2.5 million" is 2,500,000; "two thousand and ten" 2,010."""
