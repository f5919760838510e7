"""Arithmetic a question only implies: reading, in one sentence of the document, the two numbers
whose difference answers it, for a calculator to compute.

Three readings, each fired by the question's form and confirmed by the sentence's:

- **A complement.** "Of the 40 crew, 9 were lost": the question asks for the members of the whole
  the sentence does not count: its predicate is negated where the sentence's is not (or the
  reverse), it says "other than", "the rest", "not", or it asks "how many of the X" with a
  predicate the document never uses, while the sentence counts a part with "of them", "of
  which", "Of the N ...". A sentence that leaves a part uncounted ("and the rest from ...") is
  read the same way. Answer: whole - part.
- **A change.** "How many rooms did the new wing add": the question's verb is one of change
  (add, gain, lose, grow, ...), and the clause that matches the question holds the new count
  while the sentence's preceding count is the old one, with a word of change between them.
  Answer: |new - old|.
- **A year stated relative to another.** "It opened in 1905, two years after the company was
  formed": the year of the event the question asks about is 1905 - 2; "appointed in 1870 at
  the age of 31" gives a birth year. Only where no sentence states that year outright.

Each reading returns an arithmetic expression over numbers copied from the text (the calculator
computes it) and the sentence as evidence; ``None`` when none applies, and the caller then
answers the question as a plain one. Pure functions: no I/O, no model.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from lemminflect import getAllLemmas

from ..tools.text import rank, terms
from .calculator import to_number
from .phrases import parts_of_speech

_WORDS = (
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety"
)
_NUM = rf"(?:\d{{1,3}}(?:,\d{{3}})+|\d+)(?:\.\d+)?(?:\s(?:thousand|million|billion))?|(?:{_WORDS.replace(' ', '|')})(?:-(?:{_WORDS.replace(' ', '|')}))?"
NUMBER = re.compile(rf"(?<![\w.,])(?:[$£€]\s?)?(?i:{_NUM})(?![\w])")
YEAR = re.compile(r"(?<![\w,.])(?:1[0-9]{3}|20[0-9]{2})(?!\w|[,.]\d)")
# Where one clause ends and the next begins, inside a sentence.
CLAUSE_END = re.compile(r",\s+|;\s+|\s+(?:and|but|while|whereas)\s+")
NEGATION = re.compile(r"\b(?:not|never|no longer|n't|none)\b", re.IGNORECASE)
# The question asks for what the sentence leaves uncounted.
COMPLEMENT_CUE = re.compile(
    r"\b(?:other than|apart from|besides|except|the rest|remainder|remaining|not)\b", re.IGNORECASE
)
# The sentence counts a part of a whole it counted just before.
# "12 of them", "5.9 million pounds of which": the part's unit may stand before the "of".
PART_OF = re.compile(r"^\s*(?:[a-z]+\s+)?of (?:them|whom|which|these|those)\b", re.IGNORECASE)
PART_AFTER = re.compile(r"\bof (?:whom|which)\b[^,;]*$", re.IGNORECASE)
WHOLE_AFTER_OF = re.compile(r"\bof the\s+$", re.IGNORECASE)
PARTITIVE = re.compile(r"\bhow many of\b", re.IGNORECASE)
REST = re.compile(r"\b(?:the rest|the remainder|the others|the remaining)\b", re.IGNORECASE)
# Verbs of change in number: the general class, as a lemma list.
CHANGE = frozenset(
    "add gain lose grow rise increase raise expand extend enlarge fall drop decline decrease reduce "
    "cut shrink double treble".split()
)
CHANGE_WORD = re.compile(
    r"\b(?:add|gain|lose|lost|grow|grew|rise|rose|raise|increas|expand|extend|enlarg|fall|fell|drop|declin"
    r"|decreas|reduc|cut|shrank|shrunk|shrink|doubl|trebl)\w*|\b(?:from|to) (?=\S*\d)",
    re.IGNORECASE,
)
AGE = re.compile(
    rf"\b(?:(?:at the age of|aged|age) (?P<n>{_NUM})|(?P<old>{_NUM})[ -]years?[ -]old)\b", re.IGNORECASE
)
# "rebuilt two years later": the clause's own event, dated from the year before it.
LATER = re.compile(
    rf"\b(?:(?P<n>{_NUM}) years? (?P<dir>later|afterwards|earlier)|the (?P<one>following|next|previous|preceding) year)\b(?! than)",
    re.IGNORECASE,
)
OFFSET = re.compile(
    rf"\b(?P<n>{_NUM}) years? (?P<dir>after|before|later than|earlier than) (?P<event>[^,;.]+)", re.IGNORECASE
)


@dataclass(frozen=True)
class Reading:
    """An implied calculation: ``expression`` for the calculator, and the sentence it came from."""

    kind: str
    expression: str
    sentence: str


@dataclass(frozen=True)
class _Count:
    value: float
    start: int
    end: int
    clause: str  # the clause of the sentence the number stands in


def _value(text: str) -> float | None:
    v = to_number(text)
    return None if v is None else float(v)


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else str(v)


def _clauses(sentence: str) -> list[tuple[int, int]]:
    bounds, start = [], 0
    for m in CLAUSE_END.finditer(sentence):
        bounds.append((start, m.start()))
        start = m.end()
    bounds.append((start, len(sentence)))
    return bounds


def counts(sentence: str) -> list[_Count]:
    """The numbers of ``sentence`` that count something: not years, not ages or dates."""
    clauses = _clauses(sentence)
    out = []
    for m in NUMBER.finditer(sentence):
        if YEAR.fullmatch(m.group(0)):
            continue
        value = _value(m.group(0))
        if value is None:
            continue
        a, b = next(((a, b) for a, b in clauses if a <= m.start() < b + 1), (0, len(sentence)))
        out.append(_Count(value, m.start(), m.end(), sentence[a:b]))
    return out


def _is_verb(word: str) -> bool:
    return "VERB" in parts_of_speech(word)


def question_parts(question: str) -> tuple[str, str]:
    """``(whole, predicate)`` of "how many of the X ... VERB ...?": the predicate is the question's
    last verb and what follows it ("the men who built it | survived the work")."""
    body = re.sub(r"^.*?\bhow (?:many|much)\s+(?:of\s+)?", "", question.strip().rstrip("?"), flags=re.IGNORECASE)
    words = body.split()
    for i in range(len(words) - 1, 0, -1):
        if _is_verb(words[i]) and words[i - 1].lower() not in {"the", "a", "an", "its", "their", "of", "to"}:
            return " ".join(words[:i]), " ".join(words[i:])
    return body, ""


def _overlap(a: str, b: str) -> int:
    return len(set(terms(a)) & set(terms(b)))


def complement(question: str, sentence: str, document_terms: set[str]) -> Reading | None:
    """whole - part, where the sentence counts a part of a whole and the question asks for the rest."""
    whole_q, pred_q = question_parts(question)
    found = counts(sentence)
    pairs: list[tuple[_Count, _Count]] = []
    for j, part in enumerate(found):
        before, after = sentence[: part.start], sentence[part.end :]
        earlier = [c for c in found[:j] if c.value > part.value]
        if earlier and (PART_OF.match(after) or PART_AFTER.search(before)):
            pairs.append((earlier[-1], part))
        # "eleven of them served ... and four did not return": a part of that part.
        if j and pairs and pairs[-1][1] is found[j - 1] and found[j - 1].value > part.value:
            if part.clause != found[j - 1].clause and not PART_OF.match(after):
                pairs.append((found[j - 1], part))
        # "Of the 46 men ..., 7 died": the whole comes first.
        for whole in found[:j]:
            if WHOLE_AFTER_OF.search(sentence[: whole.start]) and whole.value > part.value:
                pairs.append((whole, part))
    if not pairs and PARTITIVE.search(question) and len(found) == 2:
        # "killed 31 miners; 112 men were underground": no "of them", the whole given after its
        # part; the question's own words say which count is the whole.
        big, small = sorted(found, key=lambda c: -c.value)

        def named(c: _Count) -> tuple[int, int]:  # the thing counted ("112 men"), then the clause
            return (_overlap(whole_q, " ".join(sentence[c.end :].split()[:1])), _overlap(whole_q, c.clause))

        if named(big) > named(small) and big.clause != small.clause:
            pairs.append((big, small))
    if not pairs:
        return None
    rest = next((sentence[a:b] for a, b in _clauses(sentence) if REST.search(sentence[a:b])), None)

    def fit(pair: tuple[_Count, _Count]) -> tuple[int, int]:
        whole, part = pair
        return (_overlap(whole_q, whole.clause) + _overlap(pred_q, part.clause), -abs(part.start - whole.end))

    whole, part = max(pairs, key=fit)
    cue = bool(COMPLEMENT_CUE.search(question))
    negated = bool(NEGATION.search(question)) != bool(NEGATION.search(part.clause))
    unused = bool(pred_q) and not set(terms(pred_q.split()[0])) & document_terms
    if rest is not None and _overlap(question, rest) > _overlap(question, part.clause):
        return Reading("complement", f"{_num(whole.value)} - {_num(part.value)}", sentence)
    if cue and NEGATION.search(part.clause) and NEGATION.search(question):
        return None  # both say "not": the part is what is asked
    if not _overlap(whole_q, whole.clause + " " + sentence[: whole.start]):
        return None  # the sentence's whole is not the question's
    if cue or (negated and _overlap(pred_q, part.clause)) or unused:
        return Reading("complement", f"{_num(whole.value)} - {_num(part.value)}", sentence)
    return None


def change(question: str, sentence: str) -> Reading | None:
    """|new - old| for "how many X did Y add": the clause that matches the question holds the new
    count and a word of change, the count before it in the sentence is the old one."""
    verbs = {lemma for w in question.split() for lemma in _lemmas(w)}
    if not verbs & CHANGE:
        return None
    found = counts(sentence)
    if len(found) < 2:
        return None
    q = [t for t in terms(question) if t not in {"mani", "much", "how"}]
    scored = [(len(set(q) & set(terms(c.clause))), i) for i, c in enumerate(found[1:], start=1)]
    best, i = max(scored)
    new, old = found[i], found[i - 1]
    # A word of change between the two counts, or the same thing counted in both clauses
    # ("it seated 1,120 ...; rebuilt with 940 seats").
    same = set(q) & set(terms(new.clause)) & set(terms(old.clause))
    if best == 0 or not (CHANGE_WORD.search(new.clause + " " + old.clause) or same):
        return None
    return Reading("change", f"abs({_num(new.value)} - {_num(old.value)})", sentence)


def _lemmas(word: str) -> set[str]:
    return {lemma for forms in getAllLemmas(word.lower().strip(",.;:?!'\"")).values() for lemma in forms}


ALL_BUT = re.compile(
    rf"\ball but (?P<m>{_NUM}) of (?:its|the|their|his|her|our) (?:(?P<n>{_NUM}) )?(?P<noun>[a-z]+)", re.IGNORECASE
)


def all_but(question: str, sentence: str, sents: list[str]) -> Reading | None:
    """N - M for "all but M of its N things" (N, when the phrase omits it, is the count the
    document gives those things elsewhere: "it has 96 stalls")."""
    m = ALL_BUT.search(sentence)
    if m is None or NEGATION.search(question) or not set(terms(m.group("noun"))) & set(terms(question)):
        return None
    part = _value(m.group("m"))
    whole = _value(m.group("n")) if m.group("n") else None
    if whole is None:
        counted = re.compile(rf"(?<![\w.,])({_NUM}) (?:\w+ )?{re.escape(m.group('noun'))}\b", re.IGNORECASE)
        found = next((c for s in sents for c in counted.finditer(s) if not YEAR.fullmatch(c.group(1))), None)
        whole = _value(found.group(1)) if found else None
    if part is None or whole is None or whole <= part:
        return None
    return Reading("complement", f"{_num(whole)} - {_num(part)}", sentence)


YEAR_QUESTION = re.compile(r"^\s*(?:in )?(?:what|which) year\b|^\s*when\b", re.IGNORECASE)


def relative_year(question: str, sents: list[str], find_year: Callable[[str, str], int | None]) -> Reading | None:
    """The year of an event the document dates only relative to another, or a birth year from an
    age at a dated event; None where a sentence states the asked-for year outright."""
    if not YEAR_QUESTION.search(question):
        return None
    qterms = set(terms(question)) - {"year"}
    predicate = [w for w in re.findall(r"[a-z]+", question.lower()) if _is_verb(w) and w not in {"was", "were", "did", "is", "year", "what", "when"}]
    if not predicate:
        return None
    verb = set(terms(predicate[-1]))
    for s in sents:  # stated outright: "founded in 1836", "born in 1831"
        for m in YEAR.finditer(s):
            near = s[max(0, m.start() - 40) : m.start()]
            if verb & set(terms(near)) and len(qterms & set(terms(s))) >= 2 and not OFFSET.search(near):
                return None
    for index, _ in rank(question, sents)[:3]:
        s = sents[index]
        for m in OFFSET.finditer(s):
            event = m.group("event")
            if not verb & set(terms(event)) or _overlap(question, event) < 2:
                continue
            years = [y for y in YEAR.finditer(s) if not (m.start() <= y.start() < m.end())]
            n = _value(m.group("n"))
            if not years or n is None:
                continue
            anchor = min(years, key=lambda y: abs(y.start() - m.start())).group(0)
            sign = "-" if m.group("dir").lower().startswith(("after", "later")) else "+"
            return Reading("relative_year", f"{anchor} {sign} {_num(n)}", s)
        for m in LATER.finditer(s):
            before = s[: m.start()]
            anchors = list(YEAR.finditer(before))
            event = before[anchors[-1].end() :] if anchors else ""
            if not anchors or not verb & set(terms(event)) or _overlap(question, s) < 2:
                continue
            n = 1.0 if m.group("one") else _value(m.group("n") or "")
            if n is None:
                continue
            later = (m.group("dir") or "").lower() in {"later", "afterwards"} or (m.group("one") or "").lower() in {"following", "next"}
            return Reading("relative_year", f"{anchors[-1].group(0)} {'+' if later else '-'} {_num(n)}", s)
        age = AGE.search(s)
        if age and "born" in question.lower() and _overlap(question, s) >= 1:
            n = _value(age.group("n") or age.group("old"))
            clause = next((s[a:b] for a, b in _clauses(s) if a <= age.start() < b + 1), s)
            # The age is at the event dated before it ("in 1901 ..., then 52 years old"); a year
            # after it dates something else ("... and served until 1901"), so then the event's
            # year is looked up elsewhere.
            stated = YEAR.findall(s[: age.start()])
            year = int(stated[-1]) if stated else find_year(AGE.sub("", clause), s)
            if n is not None and year is not None:
                return Reading("birth_year", f"{year} - {_num(n)}", s)
    return None


def implied(question: str, sents: list[str], find_year: Callable[[str, str], int | None]) -> Reading | None:
    """The first implied calculation that fits ``question`` in the sentences that match it best."""
    if not re.search(r"\bhow (?:many|much)\b", question, re.IGNORECASE):
        return relative_year(question, sents, find_year)
    if re.search(r"\bhow many (?:years|months|days|decades)\b", question, re.IGNORECASE):
        return None  # a span of time: the templates' business, not a count's
    document_terms = {t for s in sents for t in terms(s)}
    for index, _ in rank(question, sents)[:2]:
        reading = (
            all_but(question, sents[index], sents)
            or change(question, sents[index])
            or complement(question, sents[index], document_terms)
        )
        if reading is not None:
            return reading
    return None
