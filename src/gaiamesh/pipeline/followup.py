"""Follow-up questions in a conversation: a third-person pronoun that points back at an earlier
turn is replaced by what it points at, so that "And in which year was it made?" is asked
about the thing the conversation is about.

The earlier turns (the memory window) travel in ``doc_init``. A pronoun is resolved against the
most recent turn that offers a referent of its kind:

- he, she, him, his, her: the previous answer when that question asked who; otherwise a
  name in the previous question;
- it, its: the previous answer when it is a name that a what/which question asked for (the
  conversation moved on to it); otherwise what the most recent question that names something
  was about (a name, or a description such as "the museum" that fits an earlier name).

Turns carry their questions as resolved, so a referent is never a bare pronoun.

The resolver is a heuristic as a whole: it reads English pronouns, openers and names
(``heuristics.py``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..mesh.frames import Turn
from .answer_type import NAME, AnswerType, expected_type, matches
from .heuristics import (
    CONVERSATION_OPENERS,
    DEFINITE,
    DETERMINER,
    NOT_A_NOUN,
    PERSON_PRONOUNS,
    POSSESSIVE_PRONOUNS,
    SENTENCE_STARTERS,
    THING_PRONOUNS,
    TITLES,
)


def names(text: str) -> list[str]:
    """Proper-name phrases of ``text`` ("Veldt Glass Museum"), longest first, without a leading
    title or a capitalised opening word."""
    out = []
    for m in NAME.finditer(text):
        words = m.group(0).split()
        if m.start() == 0 and len(words) == 1:
            continue
        while words and words[0].lower().strip(".") in TITLES | SENTENCE_STARTERS:
            words.pop(0)
        if words:
            out.append(" ".join(words).rstrip("?.,;"))
    return sorted(dict.fromkeys(out), key=len, reverse=True)


def _is_name(answer: str) -> bool:
    a = DETERMINER.sub("", answer.strip())
    return bool(a) and matches(a, AnswerType.PERSON)


def _bare(question: str) -> str:
    """The question without a conversational opener ("And who ..." -> "who ...")."""
    words = question.split()
    while words and words[0].lower().strip(",") in CONVERSATION_OPENERS:
        words.pop(0)
    return " ".join(words)


def subjects(question: str, known: Sequence[str]) -> list[str]:
    """What ``question`` is about: its names, then definite descriptions that name something
    said before ("the museum" for an earlier "Veldt Glass Museum": same head noun)."""
    found = names(question)
    for noun in DEFINITE.findall(question):
        found += [k for k in known if k.split()[-1].lower() == noun and k not in found]
    return found


def referent(kind: str, history: Sequence[Turn]) -> str | None:
    """What a pronoun of ``kind`` ("person" or "thing") points at, most recent turn first."""
    known = [n for t in history for n in names(t.question) + ([t.answer] if _is_name(t.answer) else [])]
    for age, turn in enumerate(reversed(history)):
        question = _bare(turn.question)
        asked = expected_type(question)
        if kind == "person":
            if asked is AnswerType.PERSON and _is_name(turn.answer):
                return turn.answer.strip()
            found = [n for n in names(question) if len(n.split()) >= 2]
        else:
            # Only the last answer can be what "it" is now: the conversation moved on to it.
            if age == 0 and asked is AnswerType.ANY and _is_name(turn.answer):
                return turn.answer.strip()
            found = subjects(question, known)
        if found:
            return found[0]
    return None


def resolve(question: str, history: Sequence[Turn]) -> str:
    """``question`` with its back-pointing pronouns replaced (unchanged when nothing fits)."""
    if not history:
        return question
    tokens = re.findall(r"\w+|[^\w\s]", question)
    lowered = [t.lower() for t in tokens]
    if not (set(lowered) & (PERSON_PRONOUNS | THING_PRONOUNS)):
        return question
    out: list[str] = []
    for i, (tok, low) in enumerate(zip(tokens, lowered, strict=True)):
        kind = "person" if low in PERSON_PRONOUNS else "thing" if low in THING_PRONOUNS else None
        target = referent(kind, history) if kind else None
        if target is None:
            out.append(tok)
            continue
        nxt = lowered[i + 1] if i + 1 < len(tokens) else "?"
        possessive = low in POSSESSIVE_PRONOUNS or (low == "her" and nxt not in NOT_A_NOUN)
        if i > 0:  # "The Tamsey Chandelier" from an answer reads "the Tamsey Chandelier" mid-sentence
            target = re.sub(r"^(The|A|An) ", lambda m: m.group(1).lower() + " ", target)
        out.append(f"{target}'s" if possessive else target)
    if out and out[0].lower() in CONVERSATION_OPENERS and len(out) > 1:  # "And who designed it?"
        out = out[1:]
        out[0] = out[0][:1].upper() + out[0][1:]
    text = " ".join(out)
    return re.sub(r"\s+([?.,;!])", r"\1", text).replace(" 's", "'s")
