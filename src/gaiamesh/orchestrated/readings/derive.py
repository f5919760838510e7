"""Arithmetic a question only implies: reading, in the sentences of the document that match the
question, the numbers that answer it, for a calculator to compute.

The readings, each fired by the question's form and confirmed by the sentence's:

- **A complement.** "Of the 40 crew, 9 were lost": the question asks for the members of the whole
  the sentence does not count (its predicate negated on one side only, "other than", "the
  rest", a word the document never uses in place of the part's own, the other half of a pair
  such as men/women), while the sentence counts a part with "of them", "of which", "Of the N",
  "all but M of them", "and M did so", or lists its parts after a colon with one uncounted.
  Answer: whole - part.
- **A share, a total, a product, a ratio.** "a third of them", "of which 25 per cent" (or the
  rest of it), "of which M were X" for a percentage; "a further 45", "counting the mill",
  "three other schools", two sums of money in one chain of clauses; "forty masons, each of
  whom gave two shillings"; "how many passengers per crossing", an average gift.
- **A change.** "How many rooms did the new wing add": a verb of change in number, the new count
  in the clause that matches the question and the old one before it; a count after an
  addition ("adding 4 miles" to the 12 told before); "up from N", "of N was cut to M"; a profit
  (what was paid and what was got).
- **A year stated relative to another**, or one the document only implies (:mod:`.dates`), where
  no sentence states it outright.
- **A span of time** stated outright ("staged its last play in 1968, 57 years after it opened"; "for
  its first three decades"), or from the activity's own words ("from 1862 to 1901"; "founded in 1881" to
  "played there until 1927").

Each reading returns an arithmetic expression over numbers copied from the text and the
sentence as evidence; ``None`` when none applies, and the plan then moves on. Pure functions:
no I/O, no model.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ...pipeline.text import paraphrases, rank, terms
from .dates import (
    BORN_BEFORE,
    LATER,
    OFFSET,
    Dated,
    antecedent_of,
    implied_dates,
    is_after,
    is_later,
    subject_of,
    year_before,
)  # fmt: skip
from .phrases import split_subject, unit_tail
from .wording import (
    NUM,
    NUMBER,
    YEAR,
    Count,
    clause_at,
    clause_bounds,
    counts,
    inflected_verb,
    is_verb,
    lemmas_of,
    num_text,
    overlap,
    unit_after,
    value_of,
    years_in,
)  # fmt: skip

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
    rf"|reduc|cutt|shrink)ing)\b(?P<what>[^,;.]{{0,20}}?)\bto\s+(?:{NUM})",
    re.IGNORECASE,
)
# "a third of them", "40 per cent of which": a share of a whole counted just before.
# a fraction: "a third", "two fifths", "three quarters", "half"
NUMERATORS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9}
DENOMINATORS = {"half": 2, "third": 3, "quarter": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8, "ninth": 9, "tenth": 10}
_FRACTION = rf"(?:(?:{'|'.join(NUMERATORS)}) )?(?:{'|'.join(DENOMINATORS)}|halves|{'|'.join(d + 's' for d in DENOMINATORS if d != 'half')})"
_SHARE = rf"(?:(?P<share>{_FRACTION})|(?P<pct>\d+(?:\.\d+)?)(?: per cent|%))"
# "a third of them", "40 per cent of which", and the other order, "of which 25 per cent"
SHARE = re.compile(
    rf"\b(?:{_SHARE} of (?:them|which|whom|it|these|those)|of (?:which|whom|them|it)(?P<giver> [^,;.]{{0,60}}?)? {_SHARE.replace('?P<share>', '?P<share2>').replace('?P<pct>', '?P<pct2>')})\b",
    re.IGNORECASE,
)


def fraction(text: str) -> tuple[int, int]:
    """``(numerator, denominator)`` of "two fifths", "a quarter", "half"."""
    words = text.lower().split()
    num = NUMERATORS[words[0]] if len(words) > 1 else 1
    head = words[-1]
    den = 2 if head in ("half", "halves") else DENOMINATORS[head.removesuffix("s")]
    return num, den

# "repaired 12 of the pier's 15 lamps": a part, then its whole.
OF_WHOLE = re.compile(rf"^\s+of\s+(?:(?:the|its|their|his|her|[\w-]+'s)\s+)+(?={NUM})", re.IGNORECASE)
# "200 tickets out of 250 printed tickets", "30 clocks from 45 donated clocks": a part
# and, after its unit, the whole it was taken from (in the same unit)
OUT_OF = re.compile(rf"^\s+[a-z]+\s+(?:out of|from)\s+(?=(?:[£$€]\s?)?(?:{NUM})\b)", re.IGNORECASE)
NEGATION = re.compile(r"\b(?:not|never|no longer|n't|none)\b", re.IGNORECASE)
# The question asks for what the sentence leaves uncounted.
COMPLEMENT_CUE = re.compile(
    r"\b(?:other than|apart from|besides|except|the rest|remainder|remaining|not|the other)\b", re.IGNORECASE
)
# The sentence counts a part of a whole it counted just before.
# "12 of them", "5.9 million pounds of which": the part's unit may stand before the "of".
PART_OF = re.compile(r"^\s*(?:[a-z]+\s+)?of (?:them|whom|which|these|those)\b", re.IGNORECASE)
PART_AFTER = re.compile(r"\bof (?:whom|which)\b[^,;]*$", re.IGNORECASE)
# "Of the 46 men", "of its cost of 5,400 pounds": the whole a later part is counted from
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


@dataclass(frozen=True)
class Reading:
    """An implied calculation: ``expression`` for the calculator, and the sentence it came from."""

    kind: str
    expression: str
    sentence: str
    fit: int = 0  # how many of the question's words the clause read from shares


def question_parts(question: str) -> tuple[str, str]:
    """``(whole, predicate)`` of "how many of the X ... VERB ...?": the predicate is the question's
    last verb and what follows it ("the men who built it | survived the work")."""
    body = re.sub(r"^.*?\bhow (?:many|much)\s+(?:of\s+)?", "", question.strip().rstrip("?"), flags=re.IGNORECASE)
    words = body.split()
    for i in range(len(words) - 1, 0, -1):
        if is_verb(words[i]) and words[i - 1].lower() not in {"the", "a", "an", "its", "their", "of", "to"}:
            return " ".join(words[:i]), " ".join(words[i:])
    return body, ""


def complement(question: str, sentence: str, document_terms: set[str]) -> Reading | None:
    """whole - part, where the sentence counts a part of a whole and the question asks for the rest."""
    whole_q, pred_q = question_parts(question)
    found = counts(sentence)
    pairs: list[tuple[Count, Count]] = []
    for j, part in enumerate(found):
        before, after = sentence[: part.start], sentence[part.end :]
        earlier = [c for c in found[:j] if c.value > part.value]
        if earlier and (PART_OF.match(after) or PART_AFTER.search(before)):
            pairs.append((earlier[-1], part))
        elif earlier and re.match(r"\s+(?:did so|had done so|did)\b", after) and earlier[-1].clause != part.clause:
            # "820 members were entitled to vote and 310 did so": the part does the whole's verb
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
        # "repaired 12 of the pier's 15 lamps"; "sold 200 tickets out of 250 printed tickets"
        if j + 1 < len(found) and found[j + 1].value > part.value and not years_in(sentence[part.end : found[j + 1].start]):
            whole = found[j + 1]
            own_unit = OUT_OF.match(after) and overlap(unit_after(sentence, part.end), " ".join(sentence[whole.end :].split()[:2]))
            if OF_WHOLE.match(after) or own_unit:
                pairs.append((whole, part))
    if not pairs and PARTITIVE.search(question) and len(found) == 2:
        # "killed 31 miners; 112 men were underground": no "of them", the whole given after its
        # part; the question's own words say which count is the whole.
        big, small = sorted(found, key=lambda c: -c.value)

        def named(c: Count) -> tuple[int, int]:  # the thing counted ("112 men"), then the clause
            return (overlap(whole_q, " ".join(sentence[c.end :].split()[:1])), overlap(whole_q, c.clause))

        if named(big) > named(small) and big.clause != small.clause:
            pairs.append((big, small))
    if not pairs:
        return None
    rest = next((sentence[a:b] for a, b in clause_bounds(sentence) if REST.search(sentence[a:b])), None)

    def fit(pair: tuple[Count, Count]) -> tuple[int, int]:
        whole, part = pair
        return (overlap(whole_q, whole.clause) + overlap(pred_q, part.clause), -abs(part.start - whole.end))

    whole, part = max(pairs, key=fit)
    cue = bool(COMPLEMENT_CUE.search(question))
    negated = bool(NEGATION.search(question)) != bool(NEGATION.search(part.clause))
    unused = bool(pred_q) and not set(terms(pred_q.split()[0])) & document_terms
    says = overlap(pred_q, part.clause)
    # "5,100 of them on the opening day" for "how many came on the closing day": the
    # predicate is the part's but for one word the document never uses.
    other_part = set(terms(question)) - set(terms(sentence)) - {"mani", "much"}
    said = overlap(question, part.clause) >= 1 and overlap(question, f"{part.clause} {whole.clause}") >= 3
    contrast = said and len(other_part) == 1 and not other_part & document_terms
    unused = unused or contrast
    if rest is not None and overlap(question, rest) > overlap(question, part.clause):
        return Reading("complement", f"{num_text(whole.value)} - {num_text(part.value)}", sentence, overlap(question, rest))
    if cue and NEGATION.search(part.clause) and NEGATION.search(question):
        return None  # both say "not": the part is what is asked
    # "the crew numbered 24, of whom 5 were women" for "how many men": the other half of a pair
    # that divides every group in two.
    other = {OPPOSITE[w] for w in re.findall(r"[a-z]+", whole_q.lower()) if w in OPPOSITE}
    if other & set(re.findall(r"[a-z]+", sentence[part.end : part.end + 30].lower())) and overlap(question, whole.clause):
        return Reading("complement", f"{num_text(whole.value)} - {num_text(part.value)}", sentence, 1)
    if not overlap(whole_q, whole.clause + " " + sentence[: whole.start]):
        return None  # the sentence's whole is not the question's
    if cue or (negated and says) or unused:
        return Reading("complement", f"{num_text(whole.value)} - {num_text(part.value)}", sentence, says)
    return None


def change(question: str, sentence: str, earlier: list[str] | None = None) -> Reading | None:
    """|new - old| for "how many X did Y add": the clause that matches the question holds the new
    count and a word of change, the count before it in the sentence is the old one."""
    verbs = {lemma for w in question.split() for lemma in lemmas_of(w)}
    if not verbs & CHANGE:
        return None
    for pair in CHANGED_PAIR.finditer(sentence):
        # "averaged 1,840, up from 1,520", "its workforce of 230 was cut to 90": both counts in one phrase
        a, b = clause_at(sentence, pair.start())
        # its own clause says what the question asks, or the sentence does more than in passing
        # ("jobs lost when the pit was sold": "after which its workforce of 230 was cut to 90")
        if max(overlap(question, sentence[a:b]) + 1, overlap(question, sentence) - 1) >= 2:
            now, was = value_of(pair.group("new") or pair.group("new2")), value_of(pair.group("old") or pair.group("old2"))
            if now is not None and was is not None:
                return Reading("change", f"abs({num_text(now)} - {num_text(was)})", sentence)
    found = counts(sentence)
    if len(found) == 1 and earlier:
        # "enlarged to 16 acres in 1888": the old count is the last one before this sentence of
        # the same unit ("laid out on 9 acres").
        m = TO_COUNT.search(sentence)
        # the unit after the count, or the thing named before "to" ("reducing the seating to 980")
        unit = unit_after(sentence, found[0].end) or (m.group("what").split() or [""])[-1] if m else ""
        asked = re.search(r"\bhow many ([a-z]+)", question, re.IGNORECASE)
        if m is not None and asked and not set(terms(unit)) & set(terms(question)):
            unit = asked.group(1)  # "their number reduced to 10" for "how many dwellings were lost"
        if m is None or not unit or not set(terms(unit)) & set(terms(question)):
            return None
        olds = [c for s in earlier for c in counts(s) if set(terms(unit_after(s, c.end))) & set(terms(unit))]
        if not olds:
            return None
        return Reading("change", f"abs({num_text(found[0].value)} - {num_text(olds[-1].value)})", sentence)
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
    return Reading("change", f"abs({num_text(new.value)} - {num_text(old.value)})", sentence)


CHANGED_PAIR = re.compile(
    rf"(?<![\w.,])[£$€]?(?P<new>{NUM})(?: [a-z]+)?,? (?:up|down) from [£$€]?(?P<old>{NUM})\b"
    rf"|\bof [£$€]?(?P<old2>{NUM})(?: [a-z]+)? (?:was|were) (?:cut|reduced|increased|raised|lowered|expanded|enlarged) to [£$€]?(?P<new2>{NUM})\b",
    re.IGNORECASE,
)
PER = re.compile(r"\bhow many (?P<num>[a-z]+)\b.*?\b(?:per|for each|for every|a) (?P<den>[a-z]+)\b", re.IGNORECASE)


def ratio(question: str, sentence: str) -> Reading | None:
    """x / y for "on average, how many passengers per crossing": the sentence counts both the
    question's things ("612,000 passengers") and what they are counted per ("12,000 crossings")."""
    m = PER.search(question)
    if m is None or not re.search(r"\baverage\b|\bper\b|\bfor (?:each|every)\b", question, re.IGNORECASE):
        return None
    # what each number counts: the two words after it ("425 academic staff", "eighteen months")
    found = [(v, set(terms(" ".join(sentence[x.end() :].split()[:2])))) for x in NUMBER.finditer(sentence)
             if not YEAR.fullmatch(x.group(0)) and (v := value_of(x.group(0))) is not None]  # fmt: skip
    per = re.split(r"\s+(?:in|during|at|on)\s+|[,?]", question[m.start("den") :])[0]
    num = [v for v, u in found if u & set(terms(question[m.start("num") : m.start("den")].split(" per ")[0]))]
    den = [v for v, u in found if u & set(terms(per))]
    if not num or not den or num[0] == den[0]:
        return None
    return Reading("ratio", f"{num_text(num[0])} / {num_text(den[0])}", sentence, 2)


EACH_GAVE = re.compile(r"\bhow much did each (?P<den>[a-z]+)\b", re.IGNORECASE)


def average_each(question: str, sentence: str) -> Reading | None:
    """total / count for "on average, how much did each parishioner give": the sentence counts
    the question's givers ("240 parishioners") and a sum of money ("who gave £600 in all")."""
    m = EACH_GAVE.search(question)
    if m is None or not re.search(r"\baverage\b", question, re.IGNORECASE):
        return None
    found = counts(sentence)
    den = [c for c in found if set(terms(unit_after(sentence, c.end))) & set(terms(m.group("den")))]
    paid = [c for c in found if c.start < len(sentence) and sentence[c.start] in CURRENCY]
    if len(den) != 1 or len(paid) != 1:
        return None
    return Reading("ratio", f"{num_text(paid[0].value)} / {num_text(den[0].value)}", sentence, 2)


# "signed from Plover in 1948 for £2,000; he was sold to Harrow in 1953 for £5,500"
BOUGHT_FOR = re.compile(rf"\b(?:bought|signed|purchased|acquired)\b[^.;]*?\bfor [£$€](?P<n>{NUM})", re.IGNORECASE)
SOLD_FOR = re.compile(rf"\bsold\b[^.;]*?\bfor [£$€](?P<n>{NUM})", re.IGNORECASE)


def profit(question: str, sentence: str, before: str = "") -> Reading | None:
    """sold - bought for "how much profit (or loss) did X make on Y": the sentence tells what Y
    was bought for and what it was sold for (it may name Y only in the sentence ``before``:
    "He had been signed ...")."""
    if not re.search(r"\b(?:profit|loss)\b", question, re.IGNORECASE):
        return None
    bought, sold = BOUGHT_FOR.search(sentence), SOLD_FOR.search(sentence)
    if bought is None or sold is None or overlap(question, f"{before} {sentence}") < 1:
        return None
    cost, price = value_of(bought.group("n")), value_of(sold.group("n"))
    if cost is None or price is None:
        return None
    return Reading("change", f"abs({num_text(price)} - {num_text(cost)})", sentence, 2)


def share(question: str, sentence: str) -> Reading | None:
    """whole * share for "180,000 visitors, a third of them schoolchildren" or "cost 1.6 million
    pounds, 40 per cent of which came from X", where the question names what follows the share
    (and whole * (1 - share) where it asks for the rest)."""
    m = SHARE.search(sentence)
    if m is None:
        return None
    wholes = [c for c in counts(sentence) if c.end <= m.start()]
    # what the share is of: the words after it ("40 per cent of which came from X"), the giver
    # within it ("of which a grant paid 40 per cent"), or its clause's own ("a bequest met 30 per cent of it")
    named = sentence[m.end() : clause_at(sentence, m.end())[1]] + " " + (m.group("giver") or "")
    if not re.search(r"\w", named):
        named = sentence[clause_at(sentence, m.start())[0] : m.start()]
    # "30 per cent of which was given by parents; the rest came from the council": a question that
    # says what the rest clause says asks for the rest.
    rest_clause = next((sentence[a:b] for a, b in clause_bounds(sentence) if a >= m.end() and REST.search(sentence[a:b])), "")
    # (more than a shared verb: "came" alone ties any question about arrivals to it)
    asks_rest = overlap(question, rest_clause) > max(1, overlap(question, named))
    pair = {OPPOSITE[w] for w in re.findall(r"[a-z]+", question.lower()) if w in OPPOSITE} & set(re.findall(r"[a-z]+", named.lower()))
    if not wholes or not (overlap(question, named) or asks_rest or pair):
        return None
    whole = num_text(wholes[-1].value)
    pct, share_text = m.group("pct") or m.group("pct2"), m.group("share") or m.group("share2")
    if pct:
        part = f"{whole} * {pct} / 100"
    else:
        num, den = fraction(share_text)
        # a fraction a decimal writes exactly ("0.4") as one; thirds and sevenths as a division
        part = f"{whole} * {num / den:g}" if 10**6 % den == 0 else f"{whole} * {num} / {den}"
    # "240 members, a third of whom were women" for "how many men": the other half of a pair
    other = {OPPOSITE[w] for w in re.findall(r"[a-z]+", question.lower()) if w in OPPOSITE}
    asks_rest = asks_rest or bool(other & set(re.findall(r"[a-z]+", named.lower())))
    rest = asks_rest or COMPLEMENT_CUE.search(question) or NEGATION.search(question)
    fit = overlap(question, rest_clause if asks_rest else named)
    return Reading("share", f"{whole} - {part}" if rest else part, sentence, fit)


# "Of this, X gave ...": a sentence whose parts divide the whole the sentence before told.
OF_THIS = re.compile(r"^\s*of (?:this|that|these|it|the total|the sum)\b", re.IGNORECASE)


def remainder(question: str, sentence: str, earlier: list[str]) -> Reading | None:
    """whole - (a + b + ...) for "at a cost of £900; members gave £650 and the rest was
    borrowed" or "cost £48,000. Of this, X gave £20,000, Y £8,000, and the remainder came
    from Z", where the question says what the rest clause says (more than any part's clause)."""
    bounds = [(a, b) for a, b in clause_bounds(sentence) if REST.search(sentence[a:b])]
    if not bounds:
        return None
    rest = sentence[slice(*bounds[0])]
    found = [c for c in counts(sentence) if c.end <= bounds[0][0] and not re.match(r"\s*(?:per cent|%)", sentence[c.end :])]
    money = {c.start: sentence[c.start] in CURRENCY for c in found}
    if OF_THIS.match(sentence) and earlier:
        told = counts(earlier[-1])
        whole = told[-1] if told else None
        parts = found
        same = whole is not None and (earlier[-1][whole.start] in CURRENCY) == all(money.values())
    else:
        whole, parts = (found[0], found[1:]) if found else (None, [])
        same = len({money[c.start] for c in found}) == 1
        unit = unit_after(sentence, found[0].end) if len(found) == 1 else ""
        told = [c for e in earlier for c in counts(e) if unit and unit_after(e, c.end) == unit]
        if told and told[-1].value > found[0].value:
            # "The board has 12 seats. ... X won 7 seats and Y the rest": the whole told before
            whole, parts = told[-1], found
    asked = overlap(question, rest)
    # "45 are let to tenants from the town and the rest to tenants from the villages": a rest clause
    # without a verb of its own shares the part's predicate; its own words decide. Otherwise a
    # tie goes to the rest: a part the sentence states needs no calculation.
    gapped = not any(inflected_verb(w) for w in re.findall(r"[a-z]+", rest))
    if whole is None or not parts or not same or not asked:
        return None
    if not gapped and any(overlap(question, c.clause) > asked for c in parts):
        return None
    if overlap(question, f"{rest} {whole.clause}") < 2:
        return None  # a shared verb alone ("came") ties any question to "the rest came from"
    if whole.value <= sum(c.value for c in parts):
        return None
    taken = " + ".join(num_text(c.value) for c in parts)
    expression = f"{num_text(whole.value)} - {f'({taken})' if len(parts) > 1 else taken}"
    return Reading("remainder", expression, sentence, asked)


def listed(question: str, sentence: str) -> Reading | None:
    """whole - (a + ...) where a count is followed by a list of its parts after a colon and the
    question asks for the one part the list gives no count ("30 men aboard: a crew of 18 under
    Captain Pell, and the survey party" for "how many men made up the survey party")."""
    if not re.search(r"\bhow many\b", question, re.IGNORECASE):
        return None
    for colon in re.finditer(r":", sentence):
        told = counts(sentence[: colon.start()])
        if not told or ";" in sentence[told[-1].end : colon.start()]:
            continue
        whole = told[-1]
        end = sentence.find(";", colon.end())
        items = [i.strip(" .") for i in re.split(r",\s*(?:and\s+)?|\s+and\s+", sentence[colon.end() : end if end > 0 else None])]
        items = [i for i in items if i and not re.match(r"(?:under|with|led|by|of|from|in|at|on)\b", i, re.IGNORECASE)]
        numbered = [c.value for i in items for c in counts(i)[:1]]
        bare = [i for i in items if not counts(i) and not i[:1].isupper()]  # "Captain Pell" is no part
        if len(bare) != 1 or not numbered or whole.value <= sum(numbered) or overlap(question, bare[0]) < 1:
            continue
        # the question names the part, or the whole's unit too where the part is one word
        head = sentence[clause_at(sentence, whole.start)[0] : colon.start()]
        if overlap(question, bare[0]) < 2 and overlap(question, head) < 1:
            continue
        taken = " + ".join(num_text(v) for v in numbered)
        expression = f"{num_text(whole.value)} - {f'({taken})' if len(numbered) > 1 else taken}"
        return Reading("remainder", expression, sentence, overlap(question, bare[0]))
    return None


# "220 men in its forges and a further 35 in the pattern shop": counts added to the one before.
FURTHER = re.compile(
    rf"\b(?:(?:a further|another|an additional|an extra)\s+(?:[\w-]+\s+of\s+)?"
    rf"|(?:plus|and)\s+(?:(?:a|an|its|the|their)\s+(?:[\w-]+\s+){{0,3}}?of\s+)?)"
    rf"[£$€]?(?P<n>{NUM})\b(?! per cent| years?\b)",
    re.IGNORECASE,
)
MONEY_ASKED = re.compile(r"\b(?:cost|costs|spent|spend|paid|pay|price|raised)\b", re.IGNORECASE)
TOTAL_CUE = re.compile(r"\b(?:counting|including|in all|in total|all told|altogether|together|combined)\b", re.IGNORECASE)


def money_total(question: str, sentence: str) -> Reading | None:
    """a + b for "how much did X spend in all, including the purchase": two sums of money of
    one clause chain, joined by "and" ("bought the mill for £900 in 1970 and spent £12,500
    restoring it"), in a sentence that says what the question asks."""
    if not TOTAL_CUE.search(question) or not re.search(r"\bhow much\b", question, re.IGNORECASE):
        return None
    paid = [c for c in counts(sentence) if sentence[c.start] in CURRENCY]
    if len(paid) != 2 or not re.search(r"\band\b", sentence[paid[0].end : paid[1].start]):
        return None
    if ";" in sentence[paid[0].end : paid[1].start] or overlap(question, sentence) < 2:
        return None
    return Reading("total", f"{num_text(paid[0].value)} + {num_text(paid[1].value)}", sentence, overlap(question, sentence))


def total(question: str, sentence: str, earlier: list[str] | None = None) -> Reading | None:
    """a + b for "how many did it employ, counting the mill" where the sentence adds a count to
    the one before it ("220 men in its forges and a further 35 in the pattern shop"), or to the
    last count of its unit before the sentence ("... built at a cost of 52,000 pounds. ...
    repairs took a further 7,500 pounds")."""
    if not TOTAL_CUE.search(question):
        return None
    found = counts(sentence)
    # "ran three other schools" for "how many schools did she run, including this one"
    other = re.search(rf"(?<![\w.,])(?P<n>{NUM}) other (?P<unit>[a-z]+)", sentence, re.IGNORECASE)
    if other and set(terms(other.group("unit"))) & set(terms(question)) and (n := value_of(other.group("n"))) is not None:
        return Reading("total", f"{num_text(n)} + 1", sentence, overlap(question, sentence))
    for m in FURTHER.finditer(sentence):
        added = next((c for c in found if c.end == m.end("n")), None)
        before = [c for c in found if c.end <= m.start()]
        bare = m.group(0).split()[0].lower() in {"and", "plus"}
        if added is not None and not before and earlier and not bare:
            unit = unit_after(sentence, added.end)
            before = [c for e in earlier for c in counts(e) if unit and unit_after(e, c.end) == unit]
        # "a further" says what it adds to; a bare "and N" only where the question names the
        # added count's own clause ("counting the pattern shop")
        said = not bare or overlap(question, m.group(0) + sentence[m.end() : clause_at(sentence, m.end())[1]])
        # "bought for £2,100 and refitted for a further £650" tells a cost without the word
        paid = m.start("n") > 0 and sentence[m.start("n") - 1] in "£$€"
        if paid and not re.search(r"\bhow much\b", question, re.IGNORECASE):
            continue  # a sum of money answers no "how many"
        fit = overlap(question, sentence) + int(paid and bool(MONEY_ASKED.search(question)))
        if earlier and re.match(rf"(?:{NUM}|they|these|both)\b", sentence, re.IGNORECASE):
            # "Eight were built ..., and a further four": the subject is the sentence before's
            fit = max(fit, overlap(question, f"{earlier[-1]} {sentence}") - 1)
        if added is None or not before or not said or fit < 2:
            continue
        return Reading("total", f"{num_text(before[-1].value)} + {num_text(added.value)}", sentence, fit)
    return None


EXCEPT = re.compile(r"\b(?:other than|apart from|except(?: for)?|besides|excluding|not counting)\s+(?P<part>[^,?]+)", re.IGNORECASE)
WHOLE_WORD = re.compile(r"\b(?:whole|total|entire|all|overall|in all|altogether)\b", re.IGNORECASE)
ADDING = re.compile(rf"\b(?:adding|added|gaining|gained|an extra|a further) (?P<n>{NUM}) (?P<unit>[a-z]+)", re.IGNORECASE)


REDUCING = re.compile(
    rf"\b(?:shortening|shortened|reducing|reduced|cutting|cut|lowering|lowered)\s+(?:it|them|the\s+\w+\s+)?\s*by\s+(?P<n>{NUM})\s+(?P<unit>[a-z]+)",
    re.IGNORECASE,
)
# "a new wing of 60 places", "an extension of 90 metres": a thing and the count it brings
OF_COUNT = re.compile(rf"\b[a-z]+ of (?P<n>{NUM}) (?P<unit>[a-z]+)", re.IGNORECASE)


def same_unit(a: set[str], b: set[str]) -> bool:
    """Whether two counted words count the same thing: the same term, or a closed compound and
    its head ("classrooms" and "rooms", "warehouses" and "houses")."""
    return bool(a & b) or any(min(len(x), len(y)) >= 4 and (x.endswith(y) or y.endswith(x)) for x in a for y in b)


def after_adding(question: str, sentence: str, earlier: list[str]) -> Reading | None:
    """old + added for "how many miles of track did it have after the extension" where the
    sentence adds a count ("a branch was dug, adding 4 miles"; "and a wing of 8 beds in 1927",
    in the clause of the event the question names) to one of the same unit told before
    ("opened with 12 miles of waterway")."""
    asked = re.search(r"\bhow (?:many|much) ([a-z]+)", question, re.IGNORECASE)
    after = re.search(r"\bafter\b", question, re.IGNORECASE)
    wanted = set(terms(asked.group(1) if asked else unit_tail(question)))  # "how long ..., in metres"
    if not wanted or after is None:
        return None
    event = question[after.end() :]
    added = [(m.group("n"), m.group("unit"), "+", m.start()) for m in ADDING.finditer(sentence)]
    for m in OF_COUNT.finditer(sentence):
        if overlap(event, sentence[slice(*clause_at(sentence, m.start()))]):
            added.append((m.group("n"), m.group("unit"), "+", m.start()))
    # "cut through the hill, shortening it by 4 miles": a decrease the same way
    added += [(m.group("n"), m.group("unit"), "-", m.start()) for m in REDUCING.finditer(sentence)]
    for number, word, sign, at in added:
        unit = set(terms(word))
        n = value_of(number)
        if n is None or not same_unit(unit, wanted):
            continue
        # the count before it: in an earlier sentence, or earlier in its own ("opened with 50
        # bedrooms, and was enlarged in 1905 by a new wing of 30 rooms"), but not a part of
        # something ("relaid 3 miles of the track")
        own = [c for c in counts(sentence) if c.end <= at and not re.match(r"\s+[a-z]+\s+of\b", sentence[c.end :])]
        told = [(e, c) for e in earlier for c in counts(e)] + [(sentence, c) for c in own]
        olds = [c for e, c in told if same_unit(set(terms(unit_after(e, c.end))), unit)]
        if olds:
            return Reading("total", f"{num_text(olds[-1].value)} {sign} {num_text(n)}", sentence, overlap(question, sentence))
    return None


def whole_less_part(question: str, sentence: str) -> Reading | None:
    """whole - part for "how much do the bells other than the great bell weigh" where the
    sentence counts the part ("the great bell weighs 2,100 kilograms") and the whole in the same
    unit ("the whole peal weighs 7,300 kilograms")."""
    m = EXCEPT.search(question)
    if m is None:
        return None
    found = counts(sentence)
    parts = [c for c in found if overlap(m.group("part"), c.clause) and not WHOLE_WORD.search(c.clause)]
    wholes = [c for c in found if WHOLE_WORD.search(c.clause)]
    for part in parts:
        for whole in wholes:
            if whole.value > part.value and unit_after(sentence, whole.end) == unit_after(sentence, part.end):
                return Reading("complement", f"{num_text(whole.value)} - {num_text(part.value)}", sentence, overlap(question, sentence))
    return None


# "forty masons, each of whom gave two shillings": a count, then what each one of it has.
EACH = re.compile(
    rf"(?<![\w.,])(?P<n>{NUM})\s+(?P<what>(?:[\w-]+\s+){{0,3}}?[\w-]+),?\s+(?:each|every one)\s+(?:of (?:whom|which|them)\s+)?"
    rf"(?:[a-z]+\s+){{0,3}}?(?:(?P<m>{NUM}|a|an)\s+(?P<unit>[a-z]+)|(?P<currency>[£$€])\s?(?P<money>{NUM})\b)",
    re.IGNORECASE,
)
CURRENCY = {"£": "pounds", "$": "dollars", "€": "euros"}
# the other order, with a verb ("whose 50 members paid £4 each", "12 farmers gave £5 apiece"; not
# a price: "800 shares of £5 each")
EACH_AFTER = re.compile(
    rf"(?<![\w.,])(?P<n>{NUM})\s+(?P<what>(?:[\w-]+\s+){{0,2}}?[\w-]+)\s+(?!(?:of|at|worth|costing|priced)\b)(?:[a-z]+\s+){{1,3}}?(?P<currency>[£$€])\s?(?P<money>{NUM})\s+(?:each|apiece)\b",
    re.IGNORECASE,
)


def product(question: str, sentence: str) -> Reading | None:
    """n * m for "how many shillings did the masons give altogether" where the sentence
    counts the masons and what each one gave ("forty masons, each of whom gave two shillings")."""
    asked = re.search(r"\bhow (?:many|much) ([a-z]+)", question, re.IGNORECASE)
    if re.search(r"\b(?:each|every|per|apiece)\b", question, re.IGNORECASE):
        return None  # what each one has is stated, not a product
    starts = [x.start() for x in NUMBER.finditer(sentence) if not YEAR.fullmatch(x.group(0))]
    for m in (m for at in starts if (m := EACH.match(sentence, at) or EACH_AFTER.match(sentence, at))):
        n = value_of(m.group("n"))
        if m.group("money"):  # "each of whom gave £25": a sum of money each
            each, unit = value_of(m.group("money")), set(terms(CURRENCY[m.group("currency")]))
            money = bool(re.search(r"\bhow much\b", question, re.IGNORECASE))
        else:
            each = 1.0 if m.group("m").lower() in {"a", "an"} else value_of(m.group("m"))
            unit, money = set(terms(m.group("unit"))), False
        if n is None or each is None or not overlap(question, m.group("what")):
            continue
        if money or (asked and unit & set(terms(asked.group(1)))) or (TOTAL_CUE.search(question) and unit & set(terms(question))):
            return Reading("product", f"{num_text(n)} * {num_text(each)}", sentence, overlap(question, m.group(0)))
    return None


EQUALLY = re.compile(r"\b(?:in equal (?:shares|parts|amounts)|equally|in equal measure)\b", re.IGNORECASE)


def split(question: str, sentence: str) -> Reading | None:
    """m / n for "how much did each of the investors put up" where the sentence counts them and
    what they shared equally ("three brothers who paid £9,000 between them in equal shares")."""
    cue = EQUALLY.search(sentence)
    if cue is None or not re.search(r"\b(?:each|apiece)\b", question, re.IGNORECASE):
        return None
    found = [c for c in counts(sentence) if c.end <= cue.start()]
    asked = set(terms(question))
    # the count of what the question names ("three brothers from the town"), then what they shared
    sharers = [c for c in found if asked & set(terms(" ".join(sentence[c.end :].split()[:3])))]
    if not sharers:
        return None
    n = sharers[0]
    shared = [c for c in found if c.start > n.end]
    if not shared or n.value <= 1:
        return None
    return Reading("split", f"{num_text(shared[-1].value)} / {num_text(n.value)}", sentence, overlap(question, sentence))


LENGTH_UNIT = r"(?:feet|foot|ft|yards|metres|meters|miles|kilometres|kilometers)"
# "60 feet long and 25 feet wide", "120 metres long by 30 wide"
DIMENSIONS = re.compile(
    rf"(?<![\w.,])(?P<a>{NUM})\s+(?P<unit>{LENGTH_UNIT})\s+long\b(?:,|\s+and|\s+by)?\s+(?P<b>{NUM})(?:\s+{LENGTH_UNIT})?\s+(?:wide|broad|across)\b",
    re.IGNORECASE,
)
AREA_QUESTION = re.compile(r"\barea\b|\bsquare (?:feet|foot|yards|metres|meters|miles|kilometres)\b", re.IGNORECASE)


def area(question: str, sentence: str) -> Reading | None:
    """length * width for "what is the area of the hall" where the sentence gives the hall's
    length and width and states no area."""
    m = DIMENSIONS.search(sentence)
    if m is None or re.search(r"\barea\b|\bsquare\b", sentence, re.IGNORECASE):
        return None
    a, b = value_of(m.group("a")), value_of(m.group("b"))
    if a is None or b is None or not overlap(question, sentence[: m.start()]):
        return None
    return Reading("area", f"{num_text(a)} * {num_text(b)}", sentence, overlap(question, sentence))


# "800 shares of £5 each", "200 tickets at £5": things and what each is worth
PRICED = re.compile(
    rf"(?<![\w.,])(?P<n>{NUM})\s+(?P<what>[a-z]+)\s+(?:of|at|worth|costing|priced at)\s+(?P<currency>[£$€])\s?(?P<price>{NUM})\b",
    re.IGNORECASE,
)


def worth(question: str, sentence: str) -> Reading | None:
    """m * price for "what were X's shares worth" where the sentence prices the things ("800
    shares of £5 each") and counts X's part of them after ("X bought 120 of them")."""
    if not re.search(r"\bworth\b|\bvalue\b", question, re.IGNORECASE):
        return None
    for m in PRICED.finditer(sentence):
        price = value_of(m.group("price"))
        if price is None or not set(terms(m.group("what"))) & set(terms(question)):
            continue
        for c in counts(sentence[m.end() :]):
            after = sentence[m.end() + c.end :]
            told = sentence[m.end() : m.end() + c.end]  # who holds the part: the words up to it
            if PART_OF.match(after) and overlap(question, told) >= 2:
                return Reading("worth", f"{num_text(c.value)} * {num_text(price)}", sentence, overlap(question, told))
    return None


ALL_BUT_FRONTED = re.compile(
    rf"\bof (?:its|the|their|his|her|our) (?P<n>{NUM}) (?P<noun>[a-z]+)[^,;.]*, all but (?P<m>{NUM})\b", re.IGNORECASE
)
ALL_BUT = re.compile(
    rf"\ball but (?P<m>{NUM}) of (?:(?:its|the|their|his|her|our) (?:(?P<n>{NUM}) )?(?P<noun>[a-z]+)(?: of (?P<of>{NUM})\b)?|(?P<them>them|these|those)\b)",
    re.IGNORECASE,
)


def all_but(question: str, sentence: str, sents: list[str]) -> Reading | None:
    """N - M for "all but M of its N things" (N, when the phrase omits it, is the count the
    document gives those things elsewhere: "it has 96 stalls")."""
    if NEGATION.search(question):
        return None
    fronted = ALL_BUT_FRONTED.search(sentence)
    if fronted:
        # "of the 16 men aboard, all but four were saved"
        part, whole = value_of(fronted.group("m")), value_of(fronted.group("n"))
        if part is None or whole is None or whole <= part or not set(terms(fronted.group("noun"))) & set(terms(question)):
            return None
        return Reading("complement", f"{num_text(whole)} - {num_text(part)}", sentence)
    m = ALL_BUT.search(sentence)
    if m is None:
        return None
    part = value_of(m.group("m"))
    # "all but 3 of her crew of 40": the whole may follow its noun
    whole = value_of(m.group("n") or m.group("of")) if m.group("n") or m.group("of") else None
    noun = m.group("noun") or ""
    if m.group("them"):
        # "480 horses were sent ... and all but 35 of them came home": the count before it
        before = [c for c in counts(sentence) if c.end <= m.start()]
        whole = before[-1].value if before else None
        noun = unit_after(sentence, before[-1].end) if before else ""
    if not set(terms(noun)) & set(terms(question)):
        return None
    if whole is None:
        counted = re.compile(rf"(?<![\w.,])({NUM}) (?:\w+ )?{re.escape(noun)}\b", re.IGNORECASE)
        found = next((c for s in sents for c in counted.finditer(s) if not YEAR.fullmatch(c.group(1))), None)
        whole = value_of(found.group(1)) if found else None
    if part is None or whole is None or whole <= part:
        return None
    return Reading("complement", f"{num_text(whole)} - {num_text(part)}", sentence)


# What starts a thing's life: its age dates it.
ORIGIN = frozenset(terms("build make construct launch found establish form create"))
YEAR_QUESTION = re.compile(r"^\s*(?:in )?(?:what|which) year\b|^\s*when\b", re.IGNORECASE)


def relative_year(question: str, sents: list[str], find_year: Callable[[str, str], int | None]) -> Reading | None:
    """The year of an event the document dates only relative to another, or a birth year from an
    age at a dated event; None where a sentence states the asked-for year outright."""
    if not YEAR_QUESTION.search(question):
        return None
    qterms = set(terms(question)) - {"year"}
    # a verb of the question, not a name's word ("Brick") or a noun after its determiner ("the works")
    predicate = [
        w.lower() for det, w in re.findall(r"(?:\b(the|a|an|its|his|her|their)\s+)?\b([A-Za-z]+)", question)
        if not det and w[0].islower() and is_verb(w) and w not in {"was", "were", "did", "is", "year", "what", "when"}
    ]  # fmt: skip
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
            main = s[clause_at(s, m.start())[0] : m.start()]
            if verb & set(terms(main)) and not verb & set(terms(event)) and not years_in(main) and overlap(question, s) >= 2:
                # "... and opened five years after his death": the asked-for event is the one
                # dated relative to the other, whose year is the sentence's last before it (a
                # birth year aside) or, where it has none, the one the document gives it.
                n = value_of(m.group("n"))
                base = year_before(s, m.start()) or find_year(event, s)
                if n is None or base is None:
                    continue
                return Reading("relative_year", f"{base} {'+' if is_after(m) else '-'} {num_text(n)}", s)
            # the event as the sentence may name it ("die": "his death")
            said = set(terms(event))
            if not (verb | set(paraphrases(sorted(verb)))) & said or len(asked & said) < 2:
                continue
            years = [y for y in YEAR.finditer(s) if not (m.start() <= y.start() < m.end())]
            n = value_of(m.group("n"))
            if not years or n is None:
                continue
            anchor = min(years, key=lambda y: abs(y.start() - m.start())).group(0)
            return Reading("relative_year", f"{anchor} {'-' if is_after(m) else '+'} {num_text(n)}", s)
        for m in LATER.finditer(s):
            before = s[: m.start()]
            anchors = list(YEAR.finditer(before))
            event = before[anchors[-1].end() :] if anchors else ""
            if not anchors or not (verb | set(paraphrases(sorted(verb)))) & set(terms(event)) or overlap(question, s) < 2:
                continue
            n = 1.0 if m.group("one") or m.group("rel") else value_of(m.group("n") or "")
            if n is None:
                continue
            later = is_later(m)
            return Reading("relative_year", f"{anchors[-1].group(0)} {'+' if later else '-'} {num_text(n)}", s)
    # A date only implied ("was 23 when he took the post in 1883"): the statement made explicit
    # that names the question's subject; the rest of the question's words may be in it or in
    # the sentence it was read from ("its last head, X, retired ... after N years in
    # the post" for "when did X become head").
    def about(d: Dated) -> set[str]:
        return set(terms(d.text + " " + YEAR.sub("", d.source)))

    birth = bool(re.search(r"\b(?:born|birth)\b", question, re.IGNORECASE))
    # "the Kestrel, then 61 years old": an age counts from the start of a thing's life too, so
    # it dates the making of what the question names in full ("when was the Kestrel built")
    made = bool(names) and bool(verb & ORIGIN)

    def of_kind(d: Dated) -> bool:
        if d.kind == "birth" and made and not birth:
            return names <= set(terms(d.text))  # the age of the very thing the question names
        return (d.kind == "birth") == birth and bool((asked - names - {"year"}) & about(d))

    fits = [
        d for d in implied_dates(sents, find_year)
        if of_kind(d)
        and (names & set(terms(d.text)) if names else len(qterms & about(d)) >= 2)
    ]  # fmt: skip
    if fits:
        best = max(fits, key=lambda d: (len(names & set(terms(d.text))), len(qterms & about(d))))
        return Reading("implied_year", best.expression, best.source)
    return None


# Lemma classes (like CHANGE): what begins a thing's life or a person's term, and what ends it.
BEGIN = frozenset("open found establish build begin start launch form create join appoint elect found inaugurate add introduce buy acquire".split())
END = frozenset("close end retire die leave cease stop demolish abandon shut last final withdraw disband resign drop discontinue abolish sell".split())
FOR_SPAN = re.compile(
    rf"\bfor (?:(?:its|their|his|her|the) )?(?:first |last |next )?(?P<n>{NUM}) (?P<unit>years|decades)\b(?! (?:before|after|ago)\b)",
    re.IGNORECASE,
)
DURATION_QUESTION = re.compile(
    r"^.*?\bhow (?:many years (?:is|are|was|were|has|have|had|do|does|did|can|could|will|would)|long (?:did|does|do|has|had|have))"
    r" (?P<body>.+?)\??$",
    re.IGNORECASE,
)


def _says(text: str, lemmas: frozenset[str]) -> bool:
    return any(lemmas_of(w) & lemmas for w in re.findall(r"[A-Za-z]+", text))


def duration(question: str, sents: list[str]) -> Reading | None:
    """A span of time the document states outright, for "how many years did X do Y":

    - "The theatre closed in 1968, 57 years after it opened": a clause about X's end (a word of
      ending, and the question's words), dated N years after a beginning;
    - "she served as its secretary for 12 years", "for its first three decades": a clause that
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
            if is_after(o) and _says(o.group("event"), BEGIN) and _says(main, END) and overlap(body, main) >= 2 and overlap(question, s) >= 2:
                n = value_of(o.group("n"))
                if n is not None:
                    return Reading("duration", num_text(n), s, overlap(body, main))
        for f in FOR_SPAN.finditer(s):
            a, b = clause_at(s, f.start())
            clause = s[a:b]
            who = set(terms(subject_of(sents, index, f.start()) or "")) | set(terms(clause))
            n = value_of(f.group("n"))
            if n is None or not wanted & set(terms(clause)) or not names <= who or len(asked & (who | set(terms(clause)))) < 2:
                continue
            return Reading("duration", num_text(n * 10 if f.group("unit").lower() == "decades" else n), s, len(asked & who))
    return span(body, sents)


# A pronoun subject right after a fronted range
PRONOUN_AFTER = re.compile(r",?\s*(he|she|they|it)\b", re.IGNORECASE)
RANGE = re.compile(r"\b(?:from|between) (?P<a>1[0-9]{3}|20[0-9]{2}) (?:to|until|till|and) (?P<b>1[0-9]{3}|20[0-9]{2})\b", re.IGNORECASE)
# Endings said with a particle or a noun ("the bank was wound up", "the last kiln was put
# out", "the closure of the mill in 1875"), which no single verb lemma names.
ENDING = re.compile(r"\b(?:wound up|winding up|put out|closed down|shut down|pulled down|broken up|dissolved|closure|demolition)\b", re.IGNORECASE)
# "made at Orton from 1790", "has stood there since 1820": a year the activity runs from
SINCE_YEAR = re.compile(r"\b(?:from|since)\s+$", re.IGNORECASE)
FROM_THEN = re.compile(r"\b(?:from then on|since then|thereafter|from that time)\b", re.IGNORECASE)
# "the mill lay empty until 1960": a state whose beginning the sentence does not tell
STATE_UNTIL = re.compile(r"\b(?:lay|stood|remained|stayed|sat|was left)\b[^,;]*?\b(?:until|till) (?:1[0-9]{3}|20[0-9]{2})\b", re.IGNORECASE)
UNTIL = re.compile(r"\b(?:until|till|up to) (?:(?:the )?(?:end of |spring of |summer of |autumn of |winter of )?)(?:1[0-9]{3}|20[0-9]{2})\b", re.IGNORECASE)


def span(body: str, sents: list[str]) -> Reading | None:
    """end - start for the activity ``body`` ("the club play at Mill Meadow"), from its own
    words: a range in one clause ("edited it from 1862 to 1901"), or a year that says the
    activity or its subject began ("founded in 1881", "fired its first pots in 1802") and one
    that says it ended ("played there until 1927", "ended in 1990", "in 1951, when the kiln
    closed"), each in a clause that shares the question's words."""
    asked = set(terms(body)) - {"year"}
    split = split_subject(body)
    subject = set(terms(split[0])) if split else set()
    for i, s in enumerate(sents):
        for m in RANGE.finditer(s):
            # the clause the range's second year stands in too ("Between 1890 and | 1898 she ...")
            a, b = clause_at(s, m.start())[0], max(clause_at(s, m.start())[1], clause_at(s, m.end() - 1)[1])
            said = set(terms(s[a:b])) | set(terms(subject_of(sents, i, m.start()) or ""))
            fronted = PRONOUN_AFTER.match(s, m.end())
            if fronted:  # "Between 1890 and 1898 she worked on ...": the range before its subject
                said |= set(terms(antecedent_of(sents, i, fronted.start(1), fronted.group(1)) or ""))
            opening = s[a:b].split()[:1]
            if a > 1 and opening and opening[0].islower() and inflected_verb(opening[0], ing=False, present=False):
                # "The engine house was closed in 1961 and restored between 1988 and 1993": a clause
                # that opens with its verb is about the subject of the clause before
                said |= set(terms(s[clause_at(s, a - 2)[0] : a]))
            if len(asked & said) >= 2:
                return Reading("span", f"{m.group('b')} - {m.group('a')}", s, len(asked & said))
    starts: list[tuple[int, int, str]] = []
    ends: list[tuple[int, int, str]] = []
    for i, s in enumerate(sents):
        clauses = clause_bounds(s)
        for y in YEAR.finditer(s):
            k = next(i for i, (a, b) in enumerate(clauses) if a <= y.start() < b + 1)
            if BORN_BEFORE.search(s[clauses[k][0] : y.start()]) or re.search(r"\([^)]*$", s[: y.start()]):
                continue  # a birth, or life dates in brackets
            own = s[slice(*clauses[k])]
            after = s[slice(*clauses[k + 1])] if k + 1 < len(clauses) else ""
            when = after if re.match(r"when\b", after, re.IGNORECASE) else ""  # "left in 1951, when the kiln closed"
            said = set(terms(f"{own} {when}"))
            # the activity's own clause, or the subject's own founding or closing
            fits = len(asked & said) >= 2 or bool(subject) and subject <= said
            if not fits:
                continue
            if SINCE_YEAR.search(s, 0, y.start()):  # "from 1930 ... until 1960": 1930 is a start
                starts.append((len(asked & said), int(y.group(0)), s))
            elif _says(own, END) or UNTIL.search(own) or ENDING.search(own):
                ends.append((len(asked & said), int(y.group(0)), s))
                if len(years_in(own)) == 1 and STATE_UNTIL.search(own) and k == 0 and i:
                    # a state "until" a year began with the last event told before it ("the mill
                    # burned down in 1921. The mill lay empty until 1960")
                    since = years_in(sents[i - 1])
                    if since:
                        starts.append((len(asked & said), since[-1], sents[i - 1]))
            elif _says(own, BEGIN) or re.search(r"\bfirst\b", own, re.IGNORECASE):
                starts.append((len(asked & said), int(y.group(0)), s))
            elif _says(when, END):
                ends.append((len(asked & said), int(y.group(0)), s))
        for a, b in clauses:
            # "the engine failed in 1902; from then on the pump was driven by electricity": a start at
            # the year told last
            then = FROM_THEN.search(s, a, b)
            told = years_in(s[: then.start()]) if then else []  # across a semicolon too
            said = set(terms(s[a:b]))
            if told and (len(asked & said) >= 2 or bool(subject) and subject <= said):
                starts.append((len(asked & said), told[-1], s))
    if not starts or not ends:
        return None
    _, start, first = max(starts, key=lambda c: (c[0], -c[1]))
    _, end, last = max(ends, key=lambda c: (c[0], c[1]))
    if end <= start:
        return None
    return Reading("span", f"{end} - {start}", last if last == first else f"{first} {last}", 1)


PERCENT_QUESTION = re.compile(
    r"^\s*what (?:percent(?:age)?|per cent) of (?P<whole>.+?) (?:is|are|was|were|had|have|has|did|do|does) (?P<part>.+?)\??$",
    re.IGNORECASE,
)
OF_WHICH = re.compile(
    rf"(?<![\w.,])(?P<n>{NUM}) (?P<unit>[a-z-]+)[^.;\d]*?,? of (?:which|whom|them|these) (?P<m>{NUM}) (?:were|was|are|is|had|came) (?P<rest>[^,.;]+)",
    re.IGNORECASE,
)


def percent_of_which(question: str, sents: list[str]) -> Reading | None:
    """part / whole * 100 for "what percentage of the visitors were children" where one phrase
    gives both: "welcomed 80,000 visitors, of which 20,000 were children"."""
    q = PERCENT_QUESTION.match(question)
    if q is None:
        return None
    for index, _ in rank(question, sents)[:2]:
        for m in OF_WHICH.finditer(sents[index]):
            whole, part = value_of(m.group("n")), value_of(m.group("m"))
            if whole is None or part is None or not 0 < part < whole:
                continue
            if set(terms(m.group("unit"))) & set(terms(q.group("whole"))) and overlap(q.group("part"), m.group("rest")) >= 1:
                return Reading("share", f"round({num_text(part)} / {num_text(whole)} * 100, 1)", sents[index], 2)
    return None


def implied(question: str, sents: list[str], find_year: Callable[[str, str], int | None]) -> Reading | None:
    """The first implied calculation that fits ``question`` in the sentences that match it best."""
    if PERCENT_QUESTION.match(question):
        return percent_of_which(question, sents)
    if DURATION_QUESTION.match(question) or re.search(r"\bhow many (?:years|months|days|decades)\b", question, re.IGNORECASE):
        return duration(question, sents)  # a span of time: stated outright, or the templates' business
    measured = AREA_QUESTION.search(question) or re.search(
        r"\bworth\b|\bhow (?:long|high|tall|wide|deep|big|large)\b.*\bafter\b", question, re.IGNORECASE
    )
    if not measured and not re.search(r"\bhow (?:many|much)\b|^\s*what (?:is|was|were|are) the (?:total|combined|overall|whole)\b", question, re.IGNORECASE):
        return relative_year(question, sents, find_year)
    # a profit is told by what was paid and what was got, not by the word: a wider look
    sold = (profit(question, sents[index], sents[index - 1] if index else "") for index, _ in rank(question, sents)[:5])
    if (made := next((r for r in sold if r is not None), None)) is not None:
        return made
    document_terms = {t for s in sents for t in terms(s)}
    # Of the best two, a sentence with the question's year first ("restored by 2010").
    asked = set(YEAR.findall(question))
    best = sorted(rank(question, sents)[:2], key=lambda r: not asked & set(YEAR.findall(sents[r[0]])))
    readings = [
        ratio(question, sents[index])
        or average_each(question, sents[index])
        or all_but(question, sents[index], sents)
        or change(question, sents[index], sents[:index])
        or share(question, sents[index])
        or remainder(question, sents[index], sents[:index])
        or listed(question, sents[index])
        or money_total(question, sents[index])
        or total(question, sents[index], sents[:index])
        or whole_less_part(question, sents[index])
        or after_adding(question, sents[index], sents[:index])
        or product(question, sents[index])
        or split(question, sents[index])
        or area(question, sents[index])
        or worth(question, sents[index])
        or complement(question, sents[index], document_terms)
        for index, _ in best
    ]
    # The reading whose clause says what the question asks ("not in the flight": the clause of
    # the locks in the flight), the better-ranked sentence on a tie.
    found = [r for r in readings if r is not None]
    return max(found, key=lambda r: r.fit) if found else None
