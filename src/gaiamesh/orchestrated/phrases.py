"""Splitting a clause into its subject and its predicate, for templates whose pattern cannot
say where one ends ("what percentage of the visitors come on school trips": the visitors |
come on school trips).

The subject ends before the first word that can be a verb (lemminflect's lemma table knows
each word's possible parts of speech), with two guards from English noun phrases: a word right
after a determiner or preposition is not the verb ("the light ..."), and a word that can be a
noun followed by a word that can only be a noun is a modifier in a compound ("rail
passengers"), not the verb.
"""

from __future__ import annotations

import re

from lemminflect import getAllLemmas

# Closed classes: words that open or link noun phrases, never the predicate's verb.
_FUNCTION = frozenset(
    "a an the this that these those its their his her our your my all both each every some any "
    "no of in on at by for from to with into during per among between".split()
)


def parts_of_speech(word: str) -> frozenset[str]:
    """The parts of speech ``word`` can have ("VERB", "NOUN", ...), punctuation ignored."""
    return frozenset(getAllLemmas(word.lower().strip(",.;:!?'\"")))


def split_subject(clause: str) -> tuple[str, str] | None:
    """``(subject, predicate)`` of ``clause``, or None when no word can start the predicate."""
    words = clause.split()
    for i in range(1, len(words)):
        pos = parts_of_speech(words[i])
        # after a function word or a possessive ("the restoration's cost") comes a noun
        if "VERB" not in pos or words[i - 1].lower() in _FUNCTION or words[i - 1].endswith(("'s", "’s", "s'")):
            continue
        following = parts_of_speech(words[i + 1]) if i + 1 < len(words) else frozenset()
        # (a function word is no noun, whatever the lemma table says: "win its first")
        if "NOUN" in pos and following == {"NOUN"} and words[i + 1].lower() not in _FUNCTION:
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
    return before.islower() and before not in _FUNCTION and "NOUN" in parts_of_speech(before)


# "in millions", "how many million passengers"
_SCALE = re.compile(r"\b(?:in|how many|how much) (?:(thousand|million|billion)s?\b)", re.IGNORECASE)
_SCALES = {"thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
_UNIT_TAIL = re.compile(r",\s*in\s+[\w ]+$")


def answer_scale(question: str) -> int:
    """The scale the question wants its number in: "in million cubic metres" -> 1,000,000."""
    m = _SCALE.search(question)
    return _SCALES[m.group(1).lower()] if m else 1


def unit_tail(question: str) -> str:
    """The unit the question asks its number in (", in metres" -> "metres"; scale words aside)."""
    m = _UNIT_TAIL.search(question.strip().rstrip("?").strip())
    if m is None:
        return ""
    words = m.group(0).split()[2:]
    return " ".join(w for w in words if w.lower().rstrip("s") not in {"thousand", "million", "billion", "of"})


def drop_unit(slot: str) -> str:
    """A slot without the unit phrase the question appended to it (", in tonnes")."""
    return _UNIT_TAIL.sub("", slot).strip()
