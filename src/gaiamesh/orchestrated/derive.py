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

from ..tools.text import STOPWORDS, paraphrases, rank, terms
from .calculator import to_number
from .phrases import parts_of_speech, split_subject

_WORDS = (
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety"
)
_NUM = rf"(?:\d{{1,3}}(?:,\d{{3}})+|\d+)(?:\.\d+)?(?:\s(?:thousand|million|billion))?|(?:{_WORDS.replace(' ', '|')})(?:-(?:{_WORDS.replace(' ', '|')}))?"
NUMBER = re.compile(rf"(?<![\w.,])(?:[$£€]\s?)?(?i:{_NUM})(?![\w])")
YEAR = re.compile(r"(?<![\w,.])(?:1[0-9]{3}|20[0-9]{2})(?!\w|[,.]\d)")
# Where one clause ends and the next begins, inside a sentence.
CLAUSE_END = re.compile(r",\s+|;\s+|\s+(?:and|but|while|whereas)\s+")
# The two halves of a group divided by sex or age: a general pair list, like month names.
OPPOSITE = {
    a: b
    for x, y in (("men", "women"), ("man", "woman"), ("boys", "girls"), ("male", "female"), ("adults", "children"))
    for a, b in ((x, y), (y, x))
}
# "grew to 22 cars", "enlarged to 16 acres": a new count after a verb of change.
TO_COUNT = re.compile(
    r"\b(?:grew|grown|rose|risen|raised|increased|expanded|extended|enlarged|fell|fallen|dropped|declined"
    r"|decreased|reduced|cut|shrank|shrunk|(?:grow|ris|rais|increas|expand|extend|enlarg|fall|dropp|declin|decreas"
    rf"|reduc|cutt|shrink)ing)\b(?P<what>[^,;.]{{0,20}}?)\bto\s+(?:{_NUM})",
    re.IGNORECASE,
)
# "a third of them", "40 per cent of which": a share of a whole counted just before.
_SHARE = r"(?P<share>(?:a|one) (?:half|third|quarter|fifth|tenth)|half|two thirds|three quarters|(?P<pct>\d+(?:\.\d+)?)(?: per cent|%))"
# "a third of them", "40 per cent of which", and the other order, "of which 60 per cent"
SHARE = re.compile(
    rf"\b(?:{_SHARE} of (?:them|which|whom|it|these|those)|of (?:which|whom|them|it) {_SHARE.replace('?P<share>', '?P<share2>').replace('?P<pct>', '?P<pct2>')})\b",
    re.IGNORECASE,
)
FRACTIONS = {"half": 0.5, "third": 1 / 3, "quarter": 0.25, "fifth": 0.2, "tenth": 0.1, "two thirds": 2 / 3, "three quarters": 0.75}
# "for 41 years": a length of time, not a count of things.
DURATION = re.compile(r"[ -](?:years?|months?|weeks?|days?|hours?|decades?|centuries)\b", re.IGNORECASE)
# A year that dates a birth ("a fisherman born in the village in 1839") dates no other event.
BORN_BEFORE = re.compile(r"\bborn\b[^,;.]{0,30}$", re.IGNORECASE)
# "restored 26 of the canal's 31 locks": a part, then its whole.
OF_WHOLE = re.compile(rf"^\s+of\s+(?:(?:the|its|their|his|her|[\w-]+'s)\s+)+(?={_NUM})", re.IGNORECASE)
NEGATION = re.compile(r"\b(?:not|never|no longer|n't|none)\b", re.IGNORECASE)
# The question asks for what the sentence leaves uncounted.
COMPLEMENT_CUE = re.compile(
    r"\b(?:other than|apart from|besides|except|the rest|remainder|remaining|not)\b", re.IGNORECASE
)
# The sentence counts a part of a whole it counted just before.
# "12 of them", "5.9 million pounds of which": the part's unit may stand before the "of".
PART_OF = re.compile(r"^\s*(?:[a-z]+\s+)?of (?:them|whom|which|these|those)\b", re.IGNORECASE)
PART_AFTER = re.compile(r"\bof (?:whom|which)\b[^,;]*$", re.IGNORECASE)
# "Of the 46 men", "of its cost of 2,300 pounds": the whole a later part is counted from
WHOLE_AFTER_OF = re.compile(r"\bof (?:the|its|their|his|her)(?:\s+[a-z]+\s+of)?\s+$", re.IGNORECASE)
PARTITIVE = re.compile(r"\bhow many of\b", re.IGNORECASE)
REST = re.compile(r"\b(?:the rest|the remainder|the others|the remaining)\b", re.IGNORECASE)
# Verbs of change in number: the general class, as a lemma list.
CHANGE = frozenset(
    "add gain lose grow rise increase raise expand extend enlarge fall drop decline decrease reduce "
    "cut shrink double treble join".split()
)
CHANGE_WORD = re.compile(
    r"\b(?:add|gain|lose|lost|grow|grew|rise|rose|raise|increas|expand|extend|enlarg|fall|fell|drop|declin"
    r"|decreas|reduc|cut|shrank|shrunk|shrink|doubl|trebl)\w*|\b(?:from|to) (?=\S*\d)",
    re.IGNORECASE,
)
AGE = re.compile(
    rf"\b(?:(?:at the age of|aged|age) (?P<n>{_NUM})|(?P<old>{_NUM})[ -]years?[ -]old)\b"
    rf"|(?:\bwas|\bwere|,) then (?P<then>{_NUM})(?=[,.;])"  # "Ann Pell, then 52,", "was then 38."
    rf"|\b(?:was|were) (?P<time>{_NUM})(?: years old)? at the time\b",  # "was 37 at the time"
    re.IGNORECASE,
)
# "rebuilt two years later": the clause's own event, dated from the year before it.
LATER = re.compile(
    rf"\b(?:(?P<n>{_NUM}) years? (?P<dir>later|afterwards|earlier)|the (?P<one>following|next|previous|preceding) year"
    rf"|the year (?P<rel>before|after))\b(?! than)",
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
    fit: int = 0  # how many of the question's words the clause read from shares


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
    out = []
    for m in NUMBER.finditer(sentence):
        counted = re.match(r"\s+[a-z]+s\b", sentence[m.end() :])  # "of the 2000 members": a count
        if (YEAR.fullmatch(m.group(0)) and not counted) or DURATION.match(sentence, m.end()):
            continue
        value = _value(m.group(0))
        if value is None:
            continue
        a, b = _clause_at(sentence, m.start())
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
        # "Of the 46 men ..., 7 died": the whole comes first, the part in another clause (a
        # number in the whole's own clause describes it: "of the 54 aboard the three ships").
        for whole in found[:j]:
            if WHOLE_AFTER_OF.search(sentence[: whole.start]) and whole.value > part.value and whole.clause != part.clause:
                pairs.append((whole, part))
        # "restored 26 of the canal's 31 locks"
        if j + 1 < len(found) and OF_WHOLE.match(after) and found[j + 1].value > part.value:
            if not _years(sentence[part.end : found[j + 1].start]):
                pairs.append((found[j + 1], part))
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
    says = _overlap(pred_q, part.clause)
    # "3,700 of them came on the first day" for "how many came on the second day": the
    # predicate is the part's but for one word the document never uses.
    other_part = set(terms(question)) - set(terms(sentence)) - {"mani", "much"}
    said = _overlap(question, part.clause) >= 1 and _overlap(question, f"{part.clause} {whole.clause}") >= 3
    contrast = said and len(other_part) == 1 and not other_part & document_terms
    unused = unused or contrast
    if rest is not None and _overlap(question, rest) > _overlap(question, part.clause):
        return Reading("complement", f"{_num(whole.value)} - {_num(part.value)}", sentence, _overlap(question, rest))
    if cue and NEGATION.search(part.clause) and NEGATION.search(question):
        return None  # both say "not": the part is what is asked
    # "the crew numbered 24, of whom 5 were women" for "how many men": the other half of a pair
    # that divides every group in two.
    other = {OPPOSITE[w] for w in re.findall(r"[a-z]+", whole_q.lower()) if w in OPPOSITE}
    if other & set(re.findall(r"[a-z]+", sentence[part.end : part.end + 30].lower())) and _overlap(question, whole.clause):
        return Reading("complement", f"{_num(whole.value)} - {_num(part.value)}", sentence, 1)
    if not _overlap(whole_q, whole.clause + " " + sentence[: whole.start]):
        return None  # the sentence's whole is not the question's
    if cue or (negated and says) or unused:
        return Reading("complement", f"{_num(whole.value)} - {_num(part.value)}", sentence, says)
    return None


def _unit(sentence: str, end: int) -> str:
    """The word a count counts ("16 acres" -> "acres")."""
    following = re.match(r"\s+([a-z]+)", sentence[end:])
    return following.group(1) if following else ""


def change(question: str, sentence: str, earlier: list[str] | None = None) -> Reading | None:
    """|new - old| for "how many X did Y add": the clause that matches the question holds the new
    count and a word of change, the count before it in the sentence is the old one."""
    verbs = {lemma for w in question.split() for lemma in _lemmas(w)}
    if not verbs & CHANGE:
        return None
    found = counts(sentence)
    if len(found) == 1 and earlier:
        # "enlarged to 16 acres in 1888": the old count is the last one before this sentence of
        # the same unit ("laid out on 9 acres").
        m = TO_COUNT.search(sentence)
        # the unit after the count, or the thing named before "to" ("reducing the seating to 980")
        unit = _unit(sentence, found[0].end) or (m.group("what").split() or [""])[-1] if m else ""
        asked = re.search(r"\bhow many ([a-z]+)", question, re.IGNORECASE)
        if m is not None and asked and not set(terms(unit)) & set(terms(question)):
            unit = asked.group(1)  # "their number reduced to 10" for "how many dwellings were lost"
        if m is None or not unit or not set(terms(unit)) & set(terms(question)):
            return None
        olds = [c for s in earlier for c in counts(s) if set(terms(_unit(s, c.end))) & set(terms(unit))]
        if not olds:
            return None
        return Reading("change", f"abs({_num(found[0].value)} - {_num(olds[-1].value)})", sentence)
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


PER = re.compile(r"\bhow many (?P<num>[a-z]+)\b.*?\b(?:per|for each|for every|a) (?P<den>[a-z]+)\b", re.IGNORECASE)


def ratio(question: str, sentence: str) -> Reading | None:
    """x / y for "on average, how many passengers per crossing": the sentence counts both the
    question's things ("612,000 passengers") and what they are counted per ("12,000 crossings")."""
    m = PER.search(question)
    if m is None or not re.search(r"\baverage\b|\bper\b|\bfor (?:each|every)\b", question, re.IGNORECASE):
        return None
    # what each number counts: the two words after it ("425 academic staff", "eighteen months")
    found = [(v, set(terms(" ".join(sentence[x.end() :].split()[:2])))) for x in NUMBER.finditer(sentence)
             if not YEAR.fullmatch(x.group(0)) and (v := _value(x.group(0))) is not None]  # fmt: skip
    per = re.split(r"\s+(?:in|during|at|on)\s+|[,?]", question[m.start("den") :])[0]
    num = [v for v, u in found if u & set(terms(question[m.start("num") : m.start("den")].split(" per ")[0]))]
    den = [v for v, u in found if u & set(terms(per))]
    if not num or not den or num[0] == den[0]:
        return None
    return Reading("ratio", f"{_num(num[0])} / {_num(den[0])}", sentence, 2)


def share(question: str, sentence: str) -> Reading | None:
    """whole * share for "180,000 visitors, a third of them schoolchildren" or "cost 1.6 million
    pounds, 40 per cent of which came from X", where the question names what follows the share
    (and whole * (1 - share) where it asks for the rest)."""
    m = SHARE.search(sentence)
    if m is None:
        return None
    wholes = [c for c in counts(sentence) if c.end <= m.start()]
    named = sentence[m.end() : _clause_at(sentence, m.end())[1]]
    # "40 per cent of which was raised by members; the rest came from a grant": a question that
    # says what the rest clause says asks for the rest.
    rest_clause = next((sentence[a:b] for a, b in _clauses(sentence) if a >= m.end() and REST.search(sentence[a:b])), "")
    # (more than a shared verb: "came" alone ties any question about arrivals to it)
    asks_rest = _overlap(question, rest_clause) > max(1, _overlap(question, named))
    pair = {OPPOSITE[w] for w in re.findall(r"[a-z]+", question.lower()) if w in OPPOSITE} & set(re.findall(r"[a-z]+", named.lower()))
    if not wholes or not (_overlap(question, named) or asks_rest or pair):
        return None
    whole = _num(wholes[-1].value)
    pct, fraction = m.group("pct") or m.group("pct2"), m.group("share") or m.group("share2")
    if pct:
        part = f"{whole} * {pct} / 100"
    else:
        f = FRACTIONS[re.sub(r"^(?:a|one) ", "", fraction.lower())]
        part = f"{whole} * {round(f * 3)} / 3" if f in (1 / 3, 2 / 3) else f"{whole} * {f}"
    # "412 members, a quarter of whom were women" for "how many men": the other half of a pair
    other = {OPPOSITE[w] for w in re.findall(r"[a-z]+", question.lower()) if w in OPPOSITE}
    asks_rest = asks_rest or bool(other & set(re.findall(r"[a-z]+", named.lower())))
    rest = asks_rest or COMPLEMENT_CUE.search(question) or NEGATION.search(question)
    fit = _overlap(question, rest_clause if asks_rest else named)
    return Reading("share", f"{whole} - {part}" if rest else part, sentence, fit)


# "310 men at its mines and a further 45 at the mill": counts added to the one before.
FURTHER = re.compile(
    rf"\b(?:(?:a further|another|an additional|an extra)\s+(?:[\w-]+\s+of\s+)?"
    rf"|(?:plus|and)\s+(?:(?:a|an|its|the|their)\s+(?:[\w-]+\s+){{0,3}}?of\s+)?)"
    rf"(?P<n>{_NUM})\b(?! per cent| years?\b)",
    re.IGNORECASE,
)
TOTAL_CUE = re.compile(r"\b(?:counting|including|in all|in total|all told|altogether|together|combined)\b", re.IGNORECASE)


def total(question: str, sentence: str, earlier: list[str] | None = None) -> Reading | None:
    """a + b for "how many did it employ, counting the mill" where the sentence adds a count to
    the one before it ("310 men at its mines and a further 45 at the smelt mill"), or to the
    last count of its unit before the sentence ("... at a cost of 36,000 pounds. ... rebuilt
    at a further cost of 4,500 pounds")."""
    if not TOTAL_CUE.search(question):
        return None
    found = counts(sentence)
    # "owned four other cinemas" for "how many cinemas did he own, including the Regal"
    other = re.search(rf"(?<![\w.,])(?P<n>{_NUM}) other (?P<unit>[a-z]+)", sentence, re.IGNORECASE)
    if other and set(terms(other.group("unit"))) & set(terms(question)) and (n := _value(other.group("n"))) is not None:
        return Reading("total", f"{_num(n)} + 1", sentence, _overlap(question, sentence))
    for m in FURTHER.finditer(sentence):
        added = next((c for c in found if c.start == m.start("n")), None)
        before = [c for c in found if c.end <= m.start()]
        if added is not None and not before and earlier and m.group(0).split()[0].lower() not in {"and", "plus"}:
            unit = _unit(sentence, added.end)
            before = [c for e in earlier for c in counts(e) if unit and _unit(e, c.end) == unit]
        # "a further" says what it adds to; a bare "and N" only where the question names the
        # added count's own clause ("counting the smelt mill")
        said = m.group(0).split()[0].lower() not in {"and", "plus"} or _overlap(question, m.group(0) + sentence[m.end() : _clause_at(sentence, m.end())[1]])
        if added is None or not before or not said or _overlap(question, sentence) < 2:
            continue
        return Reading("total", f"{_num(before[-1].value)} + {_num(added.value)}", sentence, _overlap(question, sentence))
    return None


EXCEPT = re.compile(r"\b(?:other than|apart from|except(?: for)?|besides|excluding|not counting)\s+(?P<part>[^,?]+)", re.IGNORECASE)
WHOLE_WORD = re.compile(r"\b(?:whole|total|entire|all|overall|in all|altogether)\b", re.IGNORECASE)


ADDING = re.compile(rf"\b(?:adding|added|gaining|gained|an extra|a further) (?P<n>{_NUM}) (?P<unit>[a-z]+)", re.IGNORECASE)


def after_adding(question: str, sentence: str, earlier: list[str]) -> Reading | None:
    """old + added for "how many miles of track did it have after the extension" where the
    sentence adds a count ("extended ..., adding 3.5 miles") to one of the same unit told before
    ("opened with 6 miles of track")."""
    asked = re.search(r"\bhow (?:many|much) ([a-z]+)", question, re.IGNORECASE)
    if asked is None or not re.search(r"\bafter\b", question, re.IGNORECASE):
        return None
    for m in ADDING.finditer(sentence):
        unit = set(terms(m.group("unit")))
        n = _value(m.group("n"))
        if n is None or not unit & set(terms(asked.group(1))):
            continue
        olds = [c for e in earlier for c in counts(e) if set(terms(_unit(e, c.end))) & unit]
        if olds:
            return Reading("total", f"{_num(olds[-1].value)} + {_num(n)}", sentence, _overlap(question, sentence))
    return None


def whole_less_part(question: str, sentence: str) -> Reading | None:
    """whole - part for "how much do the bells other than the tenor weigh" where the sentence
    counts the part ("the tenor weighs 1,240 kilograms") and the whole in the same unit ("the
    whole ring weighs 5,880 kilograms")."""
    m = EXCEPT.search(question)
    if m is None:
        return None
    found = counts(sentence)
    parts = [c for c in found if _overlap(m.group("part"), c.clause) and not WHOLE_WORD.search(c.clause)]
    wholes = [c for c in found if WHOLE_WORD.search(c.clause)]
    for part in parts:
        for whole in wholes:
            if whole.value > part.value and _unit(sentence, whole.end) == _unit(sentence, part.end):
                return Reading("complement", f"{_num(whole.value)} - {_num(part.value)}", sentence, _overlap(question, sentence))
    return None


# "twenty-eight weavers, each of whom paid one pound": a count, then what each one of it has.
EACH = re.compile(
    rf"(?<![\w.,])(?P<n>{_NUM})\s+(?P<what>(?:[\w-]+\s+){{0,2}}?[\w-]+),?\s+(?:each|every one)\s+(?:of (?:whom|which|them)\s+)?"
    rf"(?:[a-z]+\s+){{0,3}}?(?P<m>{_NUM}|a|an)\s+(?P<unit>[a-z]+)",
    re.IGNORECASE,
)


def product(question: str, sentence: str) -> Reading | None:
    """n * m for "how many pounds did the weavers pay altogether" where the sentence counts the
    weavers and what each one paid ("twenty-eight weavers, each of whom paid one pound")."""
    asked = re.search(r"\bhow (?:many|much) ([a-z]+)", question, re.IGNORECASE)
    if re.search(r"\b(?:each|every|per|apiece)\b", question, re.IGNORECASE):
        return None  # what each one has is stated, not a product
    starts = [x.start() for x in NUMBER.finditer(sentence) if not YEAR.fullmatch(x.group(0))]
    for m in (m for at in starts if (m := EACH.match(sentence, at))):
        n = _value(m.group("n"))
        each = 1.0 if m.group("m").lower() in {"a", "an"} else _value(m.group("m"))
        unit = set(terms(m.group("unit")))
        if n is None or each is None or not _overlap(question, m.group("what")):
            continue
        if (asked and unit & set(terms(asked.group(1)))) or (TOTAL_CUE.search(question) and unit & set(terms(question))):
            return Reading("product", f"{_num(n)} * {_num(each)}", sentence, _overlap(question, m.group(0)))
    return None


def _lemmas(word: str) -> set[str]:
    return {lemma for forms in getAllLemmas(word.lower().strip(",.;:?!'\"")).values() for lemma in forms}


ALL_BUT = re.compile(
    rf"\ball but (?P<m>{_NUM}) of (?:(?:its|the|their|his|her|our) (?:(?P<n>{_NUM}) )?(?P<noun>[a-z]+)|(?P<them>them|these|those)\b)",
    re.IGNORECASE,
)


def all_but(question: str, sentence: str, sents: list[str]) -> Reading | None:
    """N - M for "all but M of its N things" (N, when the phrase omits it, is the count the
    document gives those things elsewhere: "it has 96 stalls")."""
    m = ALL_BUT.search(sentence)
    if m is None or NEGATION.search(question):
        return None
    part = _value(m.group("m"))
    whole = _value(m.group("n")) if m.group("n") else None
    noun = m.group("noun") or ""
    if m.group("them"):
        # "2,300 crates were sent ... and all but 40 of them returned": the count before it
        before = [c for c in counts(sentence) if c.end <= m.start()]
        whole = before[-1].value if before else None
        noun = _unit(sentence, before[-1].end) if before else ""
    if not set(terms(noun)) & set(terms(question)):
        return None
    if whole is None:
        counted = re.compile(rf"(?<![\w.,])({_NUM}) (?:\w+ )?{re.escape(noun)}\b", re.IGNORECASE)
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
    names = {t for w in re.findall(r"(?<!^)\b[A-Z][\w'-]*", question.strip()) for t in terms(w)}
    for s in sents:  # stated outright, of the question's own subject: "founded in 1836", "born in 1831"
        words = set(terms(s))
        for m in YEAR.finditer(s):
            near = s[max(0, m.start() - 40) : m.start()]
            if verb & set(terms(near)) and len(qterms & words) >= 2 and names <= words and not OFFSET.search(near):
                return None
    asked = set(terms(question)) | set(paraphrases(terms(question)))
    for index, _ in rank(question, sents)[:3]:
        s = sents[index]
        for m in OFFSET.finditer(s):
            event = m.group("event")
            main = s[_clause_at(s, m.start())[0] : m.start()]
            if verb & set(terms(main)) and not verb & set(terms(event)) and not _years(main) and _overlap(question, s) >= 2:
                # "... and opened five years after his death": the asked-for event is the one
                # dated relative to the other, whose year is the sentence's last before it (a
                # birth year aside) or, where it has none, the one the document gives it.
                n = _value(m.group("n"))
                base = _year_before(s, m.start()) or find_year(event, s)
                if n is None or base is None:
                    continue
                return Reading("relative_year", f"{base} {'+' if _after(m) else '-'} {_num(n)}", s)
            # the event as the sentence may name it ("die": "his death")
            said = set(terms(event))
            if not (verb | set(paraphrases(sorted(verb)))) & said or len(asked & said) < 2:
                continue
            years = [y for y in YEAR.finditer(s) if not (m.start() <= y.start() < m.end())]
            n = _value(m.group("n"))
            if not years or n is None:
                continue
            anchor = min(years, key=lambda y: abs(y.start() - m.start())).group(0)
            return Reading("relative_year", f"{anchor} {'-' if _after(m) else '+'} {_num(n)}", s)
        for m in LATER.finditer(s):
            before = s[: m.start()]
            anchors = list(YEAR.finditer(before))
            event = before[anchors[-1].end() :] if anchors else ""
            if not anchors or not (verb | set(paraphrases(sorted(verb)))) & set(terms(event)) or _overlap(question, s) < 2:
                continue
            n = 1.0 if m.group("one") or m.group("rel") else _value(m.group("n") or "")
            if n is None:
                continue
            later = _later(m)
            return Reading("relative_year", f"{anchors[-1].group(0)} {'+' if later else '-'} {_num(n)}", s)
    # A date only implied ("was 23 when he took the post in 1883"): the statement made explicit
    # that names the question's subject; the rest of the question's words may be in it or in
    # the sentence it was read from ("its last head, X, retired ... after N years in
    # the post" for "when did X become head").
    def about(d: Dated) -> set[str]:
        return set(terms(d.text + " " + YEAR.sub("", d.source)))

    birth = bool(re.search(r"\b(?:born|birth)\b", question, re.IGNORECASE))
    fits = [
        d for d in implied_dates(sents, find_year)
        if (d.kind == "birth") == birth and (asked - names - {"year"}) & about(d)
        and (names & set(terms(d.text)) if names else _overlap(question, d.text) >= 2)
    ]  # fmt: skip
    if fits:
        best = max(fits, key=lambda d: (len(names & set(terms(d.text))), len(qterms & about(d))))
        return Reading("implied_year", best.expression, best.source)
    return None


# Dates a sentence implies without stating them.
AGE_WHEN = re.compile(rf"\b(?:was|were) (?P<n>{_NUM})(?: years old)? when\b", re.IGNORECASE)
FOR_YEARS = re.compile(rf"\bfor (?P<n>{_NUM}) years\b(?! (?:until|before|after|later|earlier|ago)\b)", re.IGNORECASE)
AFTER_YEARS = re.compile(rf"\bafter (?P<n>{_NUM}) years(?P<rest>(?: (?:in|as|at|on|of) [^,;.]+)?)", re.IGNORECASE)
# "boys aged twelve to eighteen": an age range describes a group, not one person.
AGE_RANGE = re.compile(rf"^\s*(?:to|and|or|-)\s*(?i:{_NUM})\b")
LIFE = re.compile(r"\s*\((?:b\.\s*)?(?P<born>1[0-9]{3}|20[0-9]{2})\s*[–-]\s*(?P<died>1[0-9]{3}|20[0-9]{2})\)")
FOR_BEFORE = re.compile(rf"\bfor (?P<n>{_NUM}) years before [^,;.]*?\bin (?P<year>1[0-9]{{3}}|20[0-9]{{2}})\b", re.IGNORECASE)
YEAR_AFTER = re.compile(r"\s+in\s+(1[0-9]{3}|20[0-9]{2})\b")
PLUPERFECT = re.compile(r"\bhad\b", re.IGNORECASE)
PERFECT = re.compile(r"\bhaving\b", re.IGNORECASE)
# A clause's opening word that only links it to the one before.
LINK = re.compile(r"^(?:(?:and|but|while|whereas|who|which|that|then)\s+)+", re.IGNORECASE)
PROPER = re.compile(r"[A-Z][\w'-]*(?:\s+(?:of\s+)?[A-Z][\w'-]*)*")
PERSONAL = re.compile(r"(?:he|she)\b", re.IGNORECASE)
PRONOUN = re.compile(r"(?:he|she|they|it)\b", re.IGNORECASE)
MONTHS = frozenset(
    "january february march april may june july august september october november december".split()
)


@dataclass(frozen=True)
class Dated:
    """A date a sentence implies, made explicit: ``text`` ("Ann Pell was born in 1849.") is a
    sentence retrieval can find, ``expression`` how the year follows from ``source``."""

    text: str
    year: int
    expression: str
    source: str
    kind: str = "birth"  # or "end", "start" of a term, or "event" dated from another


def _proper_names(sentence: str, end: int) -> list[tuple[int, str]]:
    """``(start, name)`` of the names in ``sentence`` before ``end``: a leading function word
    dropped ("The Duke of Clarence" is "Duke of Clarence"; a sentence's opening "In" is no
    name), months and names used as a modifier ("an Asian elephant") left out."""
    out = []
    for m in PROPER.finditer(sentence[:end]):
        words = m.group(0).split()
        while words and re.sub(r"'s$", "", words[0].lower()) in STOPWORDS:
            words.pop(0)
        following = sentence[m.end() :].split()[:1]
        if following and following[0].isalpha() and following[0].islower() and parts_of_speech(following[0]) == {"NOUN"}:
            continue
        words = [w for w in words if w.lower() not in MONTHS]
        if words and not words[-1].endswith(("'s", "’s")):  # "Lenz's death" is about a death
            out.append((m.start(), " ".join(words)))
    return out


def _opening_name(s: str) -> str | None:
    """The name a sentence opens with (its subject), past function words and years."""
    names = _proper_names(s, len(s))
    if names and all(w.lower() in STOPWORDS or YEAR.fullmatch(w) for w in re.findall(r"[\w']+", s[: names[0][0]])):
        return names[0][1]
    return None


def _inflected_verb(word: str) -> bool:
    """A verb's past or present form ("died", "held"): a clause that opens with one shares the
    sentence's subject."""
    lemmas = getAllLemmas(word.lower()).get("VERB", ())
    return bool(lemmas) and word.lower() not in lemmas


def _subject(sents: list[str], i: int, at: int) -> str | None:
    """Who the clause at ``at`` of sentence ``i`` is about. The name just before it ("founded by
    Ann Pell, then 52"); for a clause that opens with a verb ("... and died in 1890 at the age
    of 70"), the sentence's subject; for a pronoun, the first name before it ("he", "she": in
    its sentence, else the one before) or the name a sentence opens with ("it", "they", which
    may stand for a thing)."""
    s = sents[i]
    start = _clause_at(s, at)[0]
    lead = LINK.sub("", s[start:at])
    names = _proper_names(s, at)
    pronoun = PRONOUN.match(lead)
    at_pronoun = start + s[start:at].find(lead) if pronoun else 0
    words = lead.split()
    while len(words) > 1 and "ADV" in parts_of_speech(words[0]) and not parts_of_speech(words[0]) & {"VERB", "NOUN"}:
        words = words[1:]  # "and later served as president": the verb after the adverb
    if pronoun is None and words and words[0][:1].islower() and _inflected_verb(words[0]):
        # The clause shares the subject of the clause before it (or of the one before that).
        prior_clauses = [c for c in _clauses(s) if c[1] <= start]
        for k in range(len(prior_clauses) - 1, -1, -1):
            a, b = prior_clauses[k]
            if k and _appositive(s[a:b], s[slice(*prior_clauses[k - 1])]):
                continue
            prior = LINK.sub("", s[a:b])
            if PRONOUN.match(prior):
                pronoun, at_pronoun = PRONOUN.match(prior), a + s[a:b].find(prior)
                break
            opening = prior.split()[:1]
            if opening and opening[0][:1].islower() and _inflected_verb(opening[0]):
                continue  # "played 41 matches for Scotland": its subject is further back too
            if re.match(r"(?:in|on|at|of|by|with|from|near|for)\s", prior, re.IGNORECASE):
                continue  # "in a rented cottage on Towngate": a phrase about the subject, not it
            parts = split_subject(prior)
            if parts is None and re.match(r"(?:the|its|their|his|her)\s", prior, re.IGNORECASE) and not _proper_names(prior, len(prior)):
                return prior.strip()  # "Its first shop, ..., opened the following year"
            copula = re.search(r"\b(?:was|were|is|are|became|becomes)\b", prior, re.IGNORECASE)
            if parts and not copula and re.match(r"(?:the|its|their|his|her)\s", parts[0], re.IGNORECASE) and not _proper_names(parts[0], len(parts[0])):
                return parts[0]  # "The society merged with its neighbour at Huddersfield": the society
            named = _proper_names(s[a:b], b - a)
            if named:
                return named[0][1]
        else:
            return None
    if pronoun is None:
        # "X, a pupil of Y, who ...": past an appositive to the name it describes
        prior_clauses = [c for c in _clauses(s) if c[1] <= start]
        if len(prior_clauses) > 1 and _appositive(s[slice(*prior_clauses[-1])], s[slice(*prior_clauses[-2])]):
            names = _proper_names(s, prior_clauses[-2][1]) or names
        return names[-1][1] if names else None
    before = _proper_names(s, at_pronoun)
    if not before:
        if i == 0:
            return None
        s = sents[i - 1]
        before = _proper_names(s, len(s))
    if PERSONAL.fullmatch(pronoun.group(0)):
        return before[0][1] if before else None
    return _opening_name(s)


APPOSITIVE = re.compile(r"^(?:a|an|the|one of)\s", re.IGNORECASE)


def _appositive(clause: str, before: str) -> bool:
    """Whether ``clause`` is a noun phrase describing the name that ends ``before`` ("William
    Bainbridge, | a pupil of the engineer Thomas Sopwith,"): it names no new subject."""
    names = _proper_names(before, len(before))
    ends_with_name = bool(names) and before.rstrip().endswith(names[-1][1])
    # no auxiliary: "the mill was sold" has its own subject and verb ("a mining engineer" has none)
    return ends_with_name and bool(APPOSITIVE.match(clause)) and not any("AUX" in parts_of_speech(w) for w in clause.split())


def _years(text: str) -> list[int]:
    return [int(y) for y in YEAR.findall(text)]


def _clause_at(s: str, at: int) -> tuple[int, int]:
    return next(((a, b) for a, b in _clauses(s) if a <= at < b + 1), (0, len(s)))


def _later(m: re.Match[str]) -> bool:
    """Whether a LATER match ("two years later", "the following year") counts forward."""
    return (m.group("dir") or "").lower() in {"later", "afterwards"} or (m.group("one") or m.group("rel") or "").lower() in {
        "following", "next", "after"
    }


def _after(m: re.Match[str]) -> bool:
    """Whether an OFFSET match ("N years after X") dates its clause after X."""
    return m.group("dir").lower().startswith(("after", "later"))


def _statement(who: str | None, clause: str) -> str:
    """``clause`` as a sentence about ``who``: its opening pronoun replaced by the name."""
    if who and PRONOUN.match(clause):
        clause = PRONOUN.sub("", clause, count=1).strip()
    return f"{who} {clause}." if who and who not in clause else f"{clause}."


def _year_before(s: str, at: int) -> int | None:
    """The year of the event told just before ``at``: the last year before it, moved by a
    "the following year" or "N years later" that stands between them; a birth year dates no
    event but the birth."""
    # within its part of the sentence: a semicolon joins two statements that date two events
    begin = s.rfind(";", 0, at) + 1
    found = [y for y in YEAR.finditer(s, begin, at) if not BORN_BEFORE.search(s[: y.start()])]
    if not found:
        return None
    year = int(found[-1].group(0))
    for m in LATER.finditer(s, found[-1].end(), at):
        n = 1.0 if m.group("one") or m.group("rel") else _value(m.group("n") or "")
        if n is None:
            return None
        later = _later(m)
        year = int(year + n if later else year - n)
    return year


def implied_dates(sents: list[str], find_year: Callable[[str, str], int | None] | None = None) -> list[Dated]:
    """The dates the document implies: a birth year from an age at a dated event ("was 23 when
    he took the post in 1883"); the end of a term given by its length from a dated start
    ("appointed in 1898 and held the post for 24 years"); the start of one ended "after N
    years" ("retired in 1952 after 28 years in charge")."""
    out: list[Dated] = []
    for i, s in enumerate(sents):
        for m in (*AGE.finditer(s), *AGE_WHEN.finditer(s)):
            n = _value(m.group("n") or m.groupdict().get("old") or m.groupdict().get("then") or m.groupdict().get("time") or "")
            if n is None or AGE_RANGE.match(s[m.end() :]):
                continue
            who = _subject(sents, i, m.start())
            if m.group(0).startswith(","):  # "the architect Percy Lund, then 44,": the name just before
                named = _proper_names(s, m.start())
                who = named[-1][1] if named and s[: m.start()].rstrip().endswith(named[-1][1]) else who
            a, b = _clause_at(s, m.start())
            if m.re is AGE_WHEN:  # "was 23 when he took the post in 1883": the event follows
                event = s[m.end() : _clause_at(s, m.end())[1]]
                year = next(iter(_years(event)), None)
            elif right_after := YEAR_AFTER.match(s, m.end()):  # "at the age of 19 in 1911"
                event, year = s[a:b].replace(m.group(0), ""), int(right_after.group(1))
            else:  # "died in 1801 at the age of 48": it precedes (a year after dates something else)
                event = s[a:b].replace(m.group(0), "")
                year = _year_before(s, m.start())
                if year is None and (m.groupdict().get("then") or m.groupdict().get("time")) and i:  # at the time just told of
                    year = _year_before(sents[i - 1], len(sents[i - 1]))
            if year is None and find_year is not None and who:
                year = find_year(f"{who} {event}", s)  # the event dated elsewhere ("at the opening")
            if year is not None and who:
                born = int(year - n)
                out.append(Dated(f"{who} was born in {born}.", born, f"{year} - {_num(n)}", s))
        for m in FOR_YEARS.finditer(s):
            n = _value(m.group("n"))
            a, b = _clause_at(s, m.start())
            since = _year_before(s, m.start())
            stated = re.match(r"\s+(?:from|starting in|beginning in)\s+(1[0-9]{3}|20[0-9]{2})\b", s[m.end() :])
            if stated:  # "served as president for 12 years from 1975"
                since = int(stated.group(1))
            # "... first coach in 1930. He coached the side for 12 years.": the year before, where
            # that sentence tells of the same activity (not "joined as a deckhand in 1874")
            if since is None and i and PRONOUN.match(s) and _overlap(sents[i - 1], s[a : m.start()]):
                since = _year_before(sents[i - 1], len(sents[i - 1]))
            perfect = PLUPERFECT.search(s[a : m.start()]) or PERFECT.search(s[max(0, a - 12) : m.start()])
            if perfect and n is not None and not stated:
                # "opened in 1936; before that the band had practised there for 71 years": a term
                # that had ended at the last event dated before it began N years earlier
                dates = [y for y in YEAR.finditer(s, 0, m.start()) if not BORN_BEFORE.search(s[: y.start()])]
                who = _subject(sents, i, m.start())
                own = split_subject(LINK.sub("", s[a : m.start()]).strip())
                if own and re.match(r"(?:the|its|their|his|her|a|an)\s", own[0], re.IGNORECASE):
                    who = None  # "the old gates had stood for 112 years": the clause names its own subject
                if dates and (who or own):
                    begun = int(int(dates[-1].group(0)) - n)
                    clause = LINK.sub("", re.sub(r"^(?:before that|until then|by then)\s+", "", s[a : m.start()].strip(), flags=re.IGNORECASE))
                    clause = re.sub(r"\b(?:had|having)\s+", "", clause).strip()
                    out.append(Dated(_statement(who, f"{clause} from {begun}"), begun, f"{dates[-1].group(0)} - {_num(n)}", s, "start"))
                continue
            if n is None or since is None or (_years(s[m.end() : b]) and not stated):
                continue  # a term whose end is stated
            who = _subject(sents, i, m.start())
            if who is None:
                continue
            end = int(since + n)
            rest = s[m.end() + (stated.end() if stated else 0) : b]
            clause = LINK.sub("", s[a : m.start()] + f"until {end}" + rest).rstrip(" .")
            out.append(Dated(_statement(who, clause), end, f"{since} + {_num(n)}", s, "end"))
        for m in LATER.finditer(s):
            # "entered service in the following year", "had reached Dunford two years earlier"
            n = 1.0 if m.group("one") or m.group("rel") else _value(m.group("n") or "")
            anchor = _year_before(s, m.start())
            if anchor is None and i:  # dated from the last year the text gave
                anchor = next((_year_before(p, len(p)) for p in (sents[i - 1], sents[i - 2] if i > 1 else "") if _years(p)), None)
            if n is None or anchor is None:
                continue
            later = _later(m)
            year = int(anchor + n if later else anchor - n)
            a, b = _clause_at(s, m.start())
            clause = LINK.sub("", re.sub(r"(?:\bin )?" + re.escape(m.group(0)), f"in {year}", s[a:b], count=1)).rstrip(" .")
            out.append(Dated(_statement(_subject(sents, i, m.start()), clause), year, f"{anchor} {'+' if later else '-'} {_num(n)}", s, "event"))
        for m in LIFE.finditer(s):
            # "the merchant Edmund Sayer (1611–1679)": a life's two dates
            names = _proper_names(s, m.start())
            if names and names[-1][0] + len(names[-1][1]) + 12 >= m.start():
                who = names[-1][1]
                out.append(Dated(f"{who} was born in {m.group('born')}.", int(m.group("born")), m.group("born"), s))
                out.append(Dated(f"{who} died in {m.group('died')}.", int(m.group("died")), m.group("died"), s, "event"))
        for m in FOR_BEFORE.finditer(s):
            # "had been a councillor for eleven years before entering Parliament in 1987"
            n = _value(m.group("n"))
            a, _b = _clause_at(s, m.start())
            who = _subject(sents, i, m.start())
            if n is None or not who:
                continue
            start = int(int(m.group("year")) - n)
            clause = LINK.sub("", s[a : m.start()]).strip()
            out.append(Dated(_statement(who, f"{clause} from {start}"), start, f"{m.group('year')} - {_num(n)}", s, "start"))
        for m in OFFSET.finditer(s):
            # "ground flour again in 1986, 75 years after the gale had stopped it": the gale's year
            n = _value(m.group("n"))
            dated = re.search(r"\b(1[0-9]{3}|20[0-9]{2}),?\s*$", s[max(0, m.start() - 8) : m.start()])
            if n is None or dated is None:
                continue
            year = int(int(dated.group(1)) - n if _after(m) else int(dated.group(1)) + n)
            sign = "-" if _after(m) else "+"
            event = m.group("event").strip()
            if PROPER.fullmatch(event):
                # "he was born in 1891, three years before Harold": the same predicate, of Harold
                main = s[_clause_at(s, m.start() - 8)[0] : m.start()]
                said = re.sub(r"\s*\bin\s+(?:1[0-9]{3}|20[0-9]{2}),?\s*$", "", main).strip()
                predicate = split_subject(said)
                if predicate and predicate[1]:
                    kind = "birth" if re.search(r"\bborn\b", predicate[1]) else "event"
                    out.append(Dated(f"{event} {predicate[1]} in {year}.", year, f"{dated.group(1)} {sign} {_num(n)}", s, kind))
                    continue
            out.append(Dated(f"{event} in {year}.", year, f"{dated.group(1)} {sign} {_num(n)}", s, "event"))
        for m in AFTER_YEARS.finditer(s):
            n = _value(m.group("n"))
            a, _b = _clause_at(s, m.start())
            ended = _years(s[a : m.start()])
            who = _subject(sents, i, m.start())
            if n is None or not ended or not who:
                continue
            start = int(ended[-1] - n)
            text = f"{who}'s {_num(n)} years{m.group('rest')} began in {start}."
            out.append(Dated(text, start, f"{ended[-1]} - {_num(n)}", s, "start"))
    return out


# Lemma classes (like CHANGE): what begins a thing's life or a person's term, and what ends it.
BEGIN = frozenset("open found establish build begin start launch form create join appoint elect found inaugurate".split())
END = frozenset("close end retire die leave cease stop demolish abandon shut last final withdraw disband resign".split())
FOR_SPAN = re.compile(
    rf"\bfor (?:(?:its|their|his|her|the) )?(?:first |last |next )?(?P<n>{_NUM}) (?P<unit>years|decades)\b(?! (?:before|after|ago)\b)",
    re.IGNORECASE,
)
DURATION_QUESTION = re.compile(
    r"^.*?\bhow (?:many years (?:is|are|was|were|has|have|had|do|does|did|can|could|will|would)|long (?:did|does|do|has|had|have))"
    r" (?P<body>.+?)\??$",
    re.IGNORECASE,
)


def _says(text: str, lemmas: frozenset[str]) -> bool:
    return any(_lemmas(w) & lemmas for w in re.findall(r"[A-Za-z]+", text))


def duration(question: str, sents: list[str]) -> Reading | None:
    """A span of time the document states outright, for "how many years did X do Y":

    - "The mill closed in 1950, 77 years after it opened": a clause about X's end (a word of
      ending, and the question's words), dated N years after a beginning;
    - "she served as its secretary for 12 years", "for its first four decades": a clause that
      says what the question asks of the question's subject, with its length.

    None where no sentence states it (the templates then compute it from two years)."""
    m = DURATION_QUESTION.match(" ".join(question.split()))
    if m is None:
        return None
    body = m.group("body")
    if re.search(r"\b(?:when|before|until|till|by the time)\b", body, re.IGNORECASE):
        return None  # cut off at another event ("had he held it when ..."): not the whole term
    names = {t for w in re.findall(r"\b[A-Z][\w'-]*", body) for t in terms(w)}
    asked = set(terms(body)) - {"year"}
    wanted = (asked | set(paraphrases(sorted(asked)))) - names
    for index, _ in rank(question, sents)[:3]:
        s = sents[index]
        for o in OFFSET.finditer(s):
            main = s[s.rfind(";", 0, o.start()) + 1 : o.start()]  # the statement the offset dates
            if _after(o) and _says(o.group("event"), BEGIN) and _says(main, END) and _overlap(body, main) >= 2 and _overlap(question, s) >= 2:
                n = _value(o.group("n"))
                if n is not None:
                    return Reading("duration", _num(n), s, _overlap(body, main))
        for f in FOR_SPAN.finditer(s):
            a, b = _clause_at(s, f.start())
            clause = s[a:b]
            who = set(terms(_subject(sents, index, f.start()) or "")) | set(terms(clause))
            n = _value(f.group("n"))
            if n is None or not wanted & set(terms(clause)) or not names <= who or len(asked & (who | set(terms(clause)))) < 2:
                continue
            return Reading("duration", _num(n * 10 if f.group("unit").lower() == "decades" else n), s, len(asked & who))
    return span(body, sents)


RANGE = re.compile(r"\b(?:from|between) (?P<a>1[0-9]{3}|20[0-9]{2}) (?:to|until|till|and) (?P<b>1[0-9]{3}|20[0-9]{2})\b", re.IGNORECASE)
UNTIL = re.compile(r"\b(?:until|till|up to) (?:(?:the )?(?:end of |spring of |summer of |autumn of |winter of )?)(?:1[0-9]{3}|20[0-9]{2})\b", re.IGNORECASE)


def span(body: str, sents: list[str]) -> Reading | None:
    """end - start for the activity ``body`` ("the club play at Maxwell Haugh"), from its own
    words: a range in one clause ("edited it from 1851 to 1889"), or a year that says the
    activity or its subject began ("founded in 1876", "cast its first bell in 1738") and one
    that says it ended ("played there until 1921", "ended in 2004", "in 1976, when the foundry
    closed"), each in a clause that shares the question's words."""
    asked = set(terms(body)) - {"year"}
    split = split_subject(body)
    subject = set(terms(split[0])) if split else set()
    for i, s in enumerate(sents):
        for m in RANGE.finditer(s):
            a, b = _clause_at(s, m.start())
            said = set(terms(s[a:b])) | set(terms(_subject(sents, i, m.start()) or ""))
            if len(asked & said) >= 2:
                return Reading("span", f"{m.group('b')} - {m.group('a')}", s, len(asked & said))
    starts: list[tuple[int, int, str]] = []
    ends: list[tuple[int, int, str]] = []
    for s in sents:
        clauses = _clauses(s)
        for y in YEAR.finditer(s):
            k = next(i for i, (a, b) in enumerate(clauses) if a <= y.start() < b + 1)
            if BORN_BEFORE.search(s[clauses[k][0] : y.start()]) or re.search(r"\([^)]*$", s[: y.start()]):
                continue  # a birth, or life dates in brackets
            own = s[slice(*clauses[k])]
            after = s[slice(*clauses[k + 1])] if k + 1 < len(clauses) else ""
            when = after if re.match(r"when\b", after, re.IGNORECASE) else ""  # "retired in 1976, when the foundry closed"
            said = set(terms(f"{own} {when}"))
            # the activity's own clause, or the subject's own founding or closing
            fits = len(asked & said) >= 2 or bool(subject) and subject <= said
            if not fits:
                continue
            if _says(own, END) or UNTIL.search(own):
                ends.append((len(asked & said), int(y.group(0)), s))
            elif _says(own, BEGIN) or re.search(r"\bfirst\b", own, re.IGNORECASE):
                starts.append((len(asked & said), int(y.group(0)), s))
            elif _says(when, END):
                ends.append((len(asked & said), int(y.group(0)), s))
    if not starts or not ends:
        return None
    _, start, first = max(starts, key=lambda c: (c[0], -c[1]))
    _, end, last = max(ends, key=lambda c: (c[0], c[1]))
    if end <= start:
        return None
    return Reading("span", f"{end} - {start}", last if last == first else f"{first} {last}", 1)


def implied(question: str, sents: list[str], find_year: Callable[[str, str], int | None]) -> Reading | None:
    """The first implied calculation that fits ``question`` in the sentences that match it best."""
    if DURATION_QUESTION.match(question) or re.search(r"\bhow many (?:years|months|days|decades)\b", question, re.IGNORECASE):
        return duration(question, sents)  # a span of time: stated outright, or the templates' business
    if not re.search(r"\bhow (?:many|much)\b|^\s*what (?:is|was|were|are) the (?:total|combined|overall|whole)\b", question, re.IGNORECASE):
        return relative_year(question, sents, find_year)
    document_terms = {t for s in sents for t in terms(s)}
    # Of the best two, a sentence with the question's year first ("restored by 2010").
    asked = set(YEAR.findall(question))
    best = sorted(rank(question, sents)[:2], key=lambda r: not asked & set(YEAR.findall(sents[r[0]])))
    readings = [
        ratio(question, sents[index])
        or all_but(question, sents[index], sents)
        or change(question, sents[index], sents[:index])
        or share(question, sents[index])
        or total(question, sents[index], sents[:index])
        or whole_less_part(question, sents[index])
        or after_adding(question, sents[index], sents[:index])
        or product(question, sents[index])
        or complement(question, sents[index], document_terms)
        for index, _ in best
    ]
    # The reading whose clause says what the question asks ("not in the flight": the clause of
    # the locks in the flight), the better-ranked sentence on a tie.
    found = [r for r in readings if r is not None]
    return max(found, key=lambda r: r.fit) if found else None
