"""Two-fact questions: split one into an inner question whose answer names a *bridge* entity, and
an outer question about that entity.

"Who was the captain of the ship that carried the party to Adelaide Island?" asks first which
ship carried the party (the Solveig), then who captained the Solveig. A 270M base model does not
chain the two on its own, so the pipeline asks them one after the other: ``search`` retrieves
for both, ``extract`` answers the inner question and asks the outer one with the bridge filled
in. Only two surface forms are recognised, both classic in reading-comprehension questions:

- a relative clause on a common noun: "the ship that carried ...", "the person who discovered ...";
- a role of a named thing: "the first captain of Kingsmead Rowing Club", "the founder of ...".

A clause on a proper name ("the Saltcote Salt Works that survive today") only restricts the
name, and a role right after "who was" ("Who was the founder of X?") is itself the question:
neither is split.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lemminflect import getAllLemmas

_PRONOUNS = frozenset({"who", "that", "which", "whom"})
_DETERMINERS = frozenset({"the", "a", "an"})
_PREPOSITIONS = frozenset({"in", "on", "at", "of", "from", "by", "to", "for", "with", "since", "during"})
_AUX = frozenset({"did", "does", "do", "was", "were", "is", "are", "has", "have", "had"})
_COPULA = frozenset({"was", "were", "is", "are"})
_ORDINALS = (
    "first second third fourth fifth sixth seventh eighth ninth tenth last original current "
    "founding longest-serving youngest oldest next previous"
).split()
# Nouns that name a person by their role: "the engineer who ..." asks "Who ...?".
PERSON_NOUNS = frozenset(
    """person man woman men women people engineer architect designer builder founder co-founder
    captain director owner president chairman chairwoman chair headmaster headmistress head teacher
    conductor manager editor leader coach keeper curator inventor creator author composer writer
    organist principal mayor successor predecessor wife husband son daughter father mother brother
    sister astronomer scientist explorer skipper master pilot commander officer artist painter
    sculptor player member secretary treasurer minister priest vicar bishop abbot warden governor
    surveyor contractor benefactor patron donor manufacturer merchant brewer miller farmer""".split()
)
_ROLE_OF = re.compile(r"^(?:(?:" + "|".join(_ORDINALS) + r")\s+)*([a-z-]+)\s+of$")


@dataclass(frozen=True)
class Decomposition:
    """``inner`` names the bridge; ``outer`` is the question with ``{bridge}`` where it goes."""

    inner: str
    outer: str

    def resolve(self, bridge: str) -> str:
        """The outer question about a known bridge entity."""
        return self.outer.replace("{bridge}", bridge)

    @property
    def remainder(self) -> str:
        """The outer question without the bridge: what to retrieve the second fact by."""
        return " ".join(self.outer.replace("{bridge}", " ").split())


def _verb_forms(word: str) -> tuple[bool, bool]:
    """(base form of a verb, past participle of a verb) as far as lemminflect knows."""
    lemmas = getAllLemmas(word)
    verbs = lemmas.get("VERB", ())
    return word in verbs, bool(verbs) and word not in verbs


def _main_predicate(words: list[str], aux: str) -> int | None:
    """Where the main clause resumes after a subject's relative clause or of-phrase.

    After "did/does/do" the main verb is a bare infinitive ("did the person who discovered the
    comet *become* director"); after "was/has" a participle ("was the first captain of the club
    *born*"). The clause's own first word is its verb, so the search starts one word later.
    """
    for i in range(1, len(words)):
        word, before = words[i], words[i - 1].lower()
        if before in _DETERMINERS | _PREPOSITIONS | _AUX or not word.isalpha() or not word.islower():
            continue  # a noun after "the", a name, a number
        base, participle = _verb_forms(word)
        if aux in {"did", "does", "do"} and base:
            return i
        if aux in _COPULA | {"has", "have", "had"} and participle:
            return i
    return None


def _opens_clause(word: str) -> bool:
    """A relative clause starts with its verb ("that carried") or its subject ("that the firm built")."""
    if word in _DETERMINERS | _AUX | {"he", "she", "they", "it", "we", "first", "later"}:
        return True
    return word.endswith("ly") or bool(getAllLemmas(word).get("VERB"))  # "that eventually took"


def decompose(question: str) -> Decomposition | None:
    """Split a two-fact question, or None when it asks one thing."""
    q = " ".join(question.strip().rstrip("?").split())
    words = q.split(" ")
    lower = [w.lower() for w in words]
    for i, w in enumerate(lower):
        if i < 2 or w not in _PRONOUNS or lower[i - 1] in _PREPOSITIONS:
            continue  # the question's own wh-word, or "in which"
        det = next((j for j in range(i - 1, max(-1, i - 5), -1) if lower[j] in _DETERMINERS), None)
        if det is None or det == i - 1:
            continue
        noun = words[det + 1 : i]
        if any(n[:1].isupper() for n in noun):
            continue  # a clause on a proper name restricts it, it does not ask for it
        if i + 1 >= len(lower) or not _opens_clause(lower[i + 1]):
            continue  # "the museum that year": "that" is no relative pronoun here
        found = _split(words, lower, det, i + 1, i)
        if found is None:
            return None
        outer, clause = found
        head = noun[-1].lower()
        person = w in {"who", "whom"} or head in PERSON_NOUNS
        inner = f"Who {clause}?" if person else f"Which {' '.join(noun)} {clause}?"
        return Decomposition(inner=inner, outer=outer)
    # "the [first] ROLE of NAME"
    for det in range(len(lower)):
        if lower[det] != "the":
            continue
        of = next((k for k in range(det + 2, min(len(lower), det + 5)) if lower[k] == "of"), None)
        if of is None:
            continue
        m = _ROLE_OF.match(" ".join(lower[det + 1 : of + 1]))
        if not m or m.group(1) not in PERSON_NOUNS:
            continue
        found = _split(words, lower, det, of + 1, of)
        if found is None:
            continue
        outer, entity = found  # the phrase after "of" is the named thing
        role = " ".join(words[det : of + 1])
        return Decomposition(inner=f"Who was {role} {entity}?", outer=outer)
    return None


def _end(words: list[str], lower: list[str], det: int, start: int) -> int:
    """End (exclusive) of the phrase that starts at ``start`` inside the NP at ``det``."""
    subject = det >= 1 and lower[det - 1] in _AUX
    if not subject:
        return len(words)
    k = _main_predicate(words[start:], lower[det - 1])
    return len(words) if k is None else start + k


def _split(words: list[str], lower: list[str], det: int, start: int, pivot: int) -> tuple[str, str] | None:
    """The outer question with ``{bridge}`` in place of the NP, and the clause after ``pivot``.

    None when the NP is the whole predicate of "who was ..." (then it is a one-fact question).
    """
    subject = det >= 1 and lower[det - 1] in _AUX
    end = _end(words, lower, det, start)
    if subject and end == len(words) and lower[det - 1] in _COPULA and det <= 2:
        return None  # "Who was the man who founded X": asks the clause itself
    clause = " ".join(words[pivot + 1 : end])
    if not clause:
        return None
    outer = " ".join([*words[:det], "{bridge}", *words[end:]]) + "?"
    return outer, clause
