"""Two-fact questions: split one into an inner question whose answer names a *bridge* entity, and
an outer question about that entity.

"Who was the captain of the ship that carried the party to Adelaide Island?" asks first which
ship carried the party (the Solveig), then who captained the Solveig. A 270M base model does not
chain the two on its own, so the pipeline asks them one after the other: ``search`` retrieves
for both, ``extract`` answers the inner question and asks the outer one with the bridge filled
in, reading only what the facts say about the bridge (``about_bridge``). The forms recognised are
the classic ones of reading-comprehension questions, told apart by the words' roles (pronouns,
determiners, person nouns, finite verbs), not by any one question's wording:

- a relative clause on a common noun: "the ship that carried ...", "the person who discovered ...";
- a role of a named thing, with modifiers: "the first captain of X", "the naval architect of X";
- a fronted subject: "The engraver of X came from which town?".

A clause on a proper name ("the Saltcote Salt Works that survive today") only restricts the
name, a role right after "who was" ("Who was the founder of X?") is itself the question, and an
outer question that asks only for the bridge's name is not split.

The splitter is a heuristic as a whole: it reads English grammar from closed word classes
(``heuristics.py``: pronouns, determiners, auxiliaries, role nouns) and lemminflect's parts of
speech. The model's own split is ``DECOMPOSE=model`` (``split.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from lemminflect import getAllLemmas

from .heuristics import (
    AUXILIARIES,
    CLAUSE,
    CLAUSE_OPENERS,
    COPULAS,
    DETERMINERS,
    PERSON_NOUNS,
    POINTS_BACK,
    PREPOSITIONS,
    RELATIVE_PRONOUNS,
    person_noun,
)
from .text import terms


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


def _main_predicate(words: list[str], aux: str, first: int = 1) -> int | None:
    """Where the main clause resumes after a subject's relative clause or of-phrase.

    After "did/does/do" the main verb is a bare infinitive ("did the person who discovered the
    comet *become* director"); after "was/has" a participle ("was the first captain of the club
    *born*"). The clause's own first word is its verb, so the search starts one word later.
    """
    for i in range(first, len(words)):
        word, before = words[i], words[i - 1].lower() if i else ""
        if before in DETERMINERS | PREPOSITIONS | AUXILIARIES or not word.isalpha() or not word.islower():
            continue  # a noun after "the", a name, a number
        base, participle = _verb_forms(word)
        if aux in {"did", "does", "do"} and base:
            return i
        if aux in COPULAS | {"has", "have", "had"} and participle:
            return i
    return None


def _opens_clause(word: str) -> bool:
    """A relative clause starts with its verb ("that carried") or its subject ("that the firm built")."""
    if word in DETERMINERS | AUXILIARIES | CLAUSE_OPENERS:
        return True
    return word.endswith("ly") or bool(getAllLemmas(word).get("VERB"))  # "that eventually took"


def decompose(question: str) -> Decomposition | None:
    """Split a two-fact question, or None when it asks one thing."""
    q = " ".join(question.strip().rstrip("?").split())
    words = q.split(" ")
    lower = [w.lower() for w in words]
    for i, w in enumerate(lower):
        if i < 2 or w not in RELATIVE_PRONOUNS or lower[i - 1] in PREPOSITIONS:
            continue  # the question's own wh-word, or "in which"
        det = next((j for j in range(i - 1, max(-1, i - 5), -1) if lower[j] in DETERMINERS), None)
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
        return _asks_more(Decomposition(inner=inner, outer=outer))
    # "the [first, naval ...] ROLE of NAME"
    for det in range(len(lower)):
        if lower[det] != "the":
            continue
        of = next((k for k in range(det + 2, min(len(lower), det + 5)) if lower[k] == "of"), None)
        if of is None:
            continue
        if not all(w.isalpha() and w.islower() for w in words[det + 1 : of]) or not person_noun(lower[of - 1]):
            continue
        found = _split(words, lower, det, of + 1, of)
        if found is None:
            continue
        outer, entity = found  # the phrase after "of" is the named thing
        role = _np(words[det : of + 1])
        return _asks_more(Decomposition(inner=f"Who was {role} {entity}?", outer=outer))
    return None


def _np(words: list[str]) -> str:
    """A noun phrase moved inside a question: "The printer of X" reads "the printer of X"."""
    first = words[0].lower() if words and words[0].lower() in DETERMINERS else words[0] if words else ""
    return " ".join([first, *words[1:]])


def _asks_more(d: Decomposition) -> Decomposition | None:
    """None when the outer question only asks for the bridge's name ("What is the name of
    {bridge}?"): then the inner question is the whole question."""
    return d if set(terms(d.remainder)) - {"name", "call"} else None


def _finite_verb(words: list[str], lower: list[str], start: int) -> int | None:
    """Where the main verb of a question that opens with its subject is: the first auxiliary,
    or the first inflected verb not right after a determiner or preposition ("The printer of
    the map *came* from which town?")."""
    for i in range(start + 1, len(words)):
        if lower[i] in AUXILIARIES:
            return i
        if lower[i - 1] in DETERMINERS | PREPOSITIONS or not words[i].isalpha() or not words[i].islower():
            continue
        base, inflected = _verb_forms(lower[i])
        if inflected and not base:
            return i
    return None


def _end(words: list[str], lower: list[str], det: int, start: int, first: int = 1) -> int:
    """End (exclusive) of the phrase that starts at ``start`` inside the NP at ``det``."""
    if det == 0:  # the question opens with the NP: it ends where the main verb begins
        k = _finite_verb(words, lower, start)
        return len(words) if k is None else k
    subject = det >= 1 and lower[det - 1] in AUXILIARIES
    if not subject:
        return len(words)
    k = _main_predicate(words[start:], lower[det - 1], first)
    return len(words) if k is None else start + k


def _split(words: list[str], lower: list[str], det: int, start: int, pivot: int) -> tuple[str, str] | None:
    """The outer question with ``{bridge}`` in place of the NP, and the clause after ``pivot``.

    None when the NP is the whole predicate of "who was ..." (then it is a one-fact question).
    """
    subject = det >= 1 and lower[det - 1] in AUXILIARIES
    end = _end(words, lower, det, start)
    if subject and end == len(words) and lower[det - 1] in COPULAS and det <= 2:
        return None  # "Who was the man who founded X": asks the clause itself
    clause = " ".join(words[pivot + 1 : end])
    if not clause:
        return None
    outer = " ".join([*words[:det], "{bridge}", *words[end:]]) + "?"
    return outer, clause


def about(sentence: str, bridge: str) -> str:
    """The clauses of ``sentence`` that mention ``bridge``: "A captained the Solveig, while B
    sailed the Kestrel" is read as "A captained the Solveig" for a question about the Solveig."""
    wanted = set(terms(bridge))
    clauses: list[str] = []
    for part in CLAUSE.split(sentence):
        if clauses and POINTS_BACK.match(part.strip().capitalize()):
            clauses[-1] = f"{clauses[-1]}; {part}"  # "...; she had been born in X": still about her
        else:
            clauses.append(part)
    parts = [p for p in clauses if wanted & set(terms(p))]
    return " ".join(parts) if parts else sentence


def about_bridge(facts: list[str], bridge: str) -> list[str]:
    """What ``facts`` say about ``bridge``: the clauses that mention it, of the facts that do
    (all the facts when none mentions it)."""
    wanted = set(terms(bridge))
    mention = [f for f in facts if wanted & set(terms(f))]
    return [about(f, bridge) for f in mention] if mention else facts
