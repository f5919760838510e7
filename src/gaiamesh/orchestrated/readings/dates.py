"""Dates a document implies, made explicit: a birth year from an age at a dated event ("was 23
when he took the post in 1883", "then 38", "was 41 at the time"), life dates in brackets, the end
of a term given by its length, the start of one ended "after N years" or told in the perfect
("had met there for 40 years"), the year of an event another is dated from, an event after
a term ("ran it for 30 years before selling it"), and a year given relative to another ("two
years later", "the year before", "who had died three years before"). Each statement names whose date
it is (the name before it, a clause's elided subject, a pronoun's referent, past appositives), so
that "X born" is not answered by Y's birth. Retrieval (``find_fact``) and ``derive`` see these
statements beside the document's own sentences. Pure functions: no I/O, no model."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ...pipeline.text import STOPWORDS
from .phrases import parts_of_speech, split_subject
from .wording import (
    NUM,
    YEAR,
    clause_at,
    clause_bounds,
    inflected_verb,
    num_text,
    overlap,
    value_of,
    years_in,
)

# A year that dates a birth ("a fisherman born in the village in 1839") dates no other event.
BORN_BEFORE = re.compile(r"\bborn\b[^,;.]{0,30}$", re.IGNORECASE)
AGE = re.compile(
    rf"\b(?:(?:at the age of|aged|age) (?P<n>{NUM})|(?P<old>{NUM})[ -]years?[ -]old)\b"
    rf"|(?:\bwas|\bwere|,) then (?P<then>{NUM})(?=[,.;]| and\b)"  # "Ann Pell, then 52,", "was then 38 and ..."
    rf"|\b(?:was|were) (?P<time>{NUM})(?: years old)? at the time\b"  # "was 41 at the time"
    rf"|^(?:he|she) was (?P<alone>{NUM})(?: years old)?\.?$"  # "... died in 1890. He was 61.": the age then
    # "she was a girl of 12 in 1850", "came as a junior clerk of 19 in 1861": a person of N is an age
    # (not "a crew of 48 men", nor "a fund of 600 pounds": a unit or a noun follows those)
    rf"|\b(?:was|were|as) (?:a|an) (?:[a-z]+ ){{0,2}}?[a-z]+ of (?P<of>{NUM})(?=[,.;]| (?:in|when|at|on|and)\b)",
    re.IGNORECASE,
)
# "rebuilt two years later": the clause's own event, dated from the year before it.
LATER = re.compile(
    rf"\b(?:(?P<n>{NUM}) years? (?P<dir>later|afterwards|earlier|before(?=[,.;])|after(?=[,.;]))|the (?P<one>following|next|previous|preceding) (?:year|spring|summer|autumn|winter)"
    rf"|the year (?P<rel>before|after))\b(?! than)",
    re.IGNORECASE,
)
OFFSET = re.compile(
    rf"\b(?P<n>{NUM}) years? (?P<dir>after|before|later than|earlier than) (?P<event>[^,;.]+)", re.IGNORECASE
)
# "took a 50-year lease", "on a five-year contract": a term that ends N years after its start
TERM_OF = re.compile(rf"\b(?:a|an|the|its|their) (?P<n>{NUM})-year (?P<noun>[a-z]+)", re.IGNORECASE)
# "kept its 75th anniversary", "celebrated its centenary": N years after its beginning
ANNIVERSARY = re.compile(
    r"\b(?:(?P<n>\d+)(?:st|nd|rd|th) (?:anniversary|birthday)|(?P<word>centenary|centennial|bicentenary|bicentennial|tercentenary))\b",
    re.IGNORECASE,
)
BEGUN = ("founded", "established", "formed", "opened", "built", "born")
CENTURIES = {"centenary": 100, "centennial": 100, "bicentenary": 200, "bicentennial": 200, "tercentenary": 300}
# Dates a sentence implies without stating them.
AGE_WHEN = re.compile(rf"\b(?:was|were) (?P<n>{NUM})(?: years old)? when\b", re.IGNORECASE)
# "for 12 years", "carried on for a further six years", "the rebuilding took two years",
# "restored over five years"; a
# season is a year of a club's or a theatre's life
FOR_YEARS = re.compile(
    rf"\b(?:for|took|lasted|over)(?: a further| another)? (?P<n>{NUM}) (?:years|seasons)\b(?! (?:until|before|after|later|earlier|ago)\b)",
    re.IGNORECASE,
)
AFTER_YEARS = re.compile(rf"\bafter (?P<n>{NUM}) years(?P<rest>(?: (?:in|as|at|on|of) [^,;.]+)?)", re.IGNORECASE)
# "boys aged twelve to eighteen": an age range describes a group, not one person.
AGE_RANGE = re.compile(rf"^\s*(?:to|and|or|-)\s*(?i:{NUM})\b")
# Life dates in brackets, as years or as whole dates: "(1790–1861)", "(9 June 1790 – 4 April
# 1861)", "(June 9, 1790 – April 4, 1861)", "(c. 1610 – 1679)", "(born Ada Pell; 1790–1861)".
_MONTH = "(?:January|February|March|April|May|June|July|August|September|October|November|December)"
_DAY_OF = rf"(?:(?:c\.|circa|ca\.)\s*)?(?:\d{{1,2}}\s+{_MONTH}\s+|{_MONTH}\s+\d{{1,2}},?\s+)?"
LIFE = re.compile(
    rf"\s*\((?:(?:born|née|nee) [^;()]+;\s*)?(?:b\.\s*)?{_DAY_OF}(?P<born>1[0-9]{{3}}|20[0-9]{{2}})\s*[–—-]\s*{_DAY_OF}(?P<died>1[0-9]{{3}}|20[0-9]{{2}})\)"
)
FOR_BEFORE = re.compile(rf"\bfor (?P<n>{NUM}) years before [^,;.]*?\bin (?P<year>1[0-9]{{3}}|20[0-9]{{2}})\b", re.IGNORECASE)
FOR_UNTIL_EVENT = re.compile(rf"\bfor (?P<n>{NUM}) years before (?P<event>[^,;.]+)", re.IGNORECASE)
YEAR_AFTER = re.compile(r"\s+in\s+(1[0-9]{3}|20[0-9]{2})\b")
PLUPERFECT = re.compile(r"\bhad\b", re.IGNORECASE)
PERFECT = re.compile(r"\bhaving\b", re.IGNORECASE)
# What ends a term: "who retired in 1910", "until he died in 1890".
ENDED = re.compile(r"\b(?:retired|retiring|left|leaving|died|ended|closed|resigned|until|stepped down)\b", re.IGNORECASE)
# A clause's opening word that only links it to the one before.
LINK = re.compile(r"^(?:(?:and|but|while|whereas|who|which|that|then)\s+)+", re.IGNORECASE)
PROPER = re.compile(r"[A-Z][\w'-]*(?:\s+(?:of\s+)?[A-Z][\w'-]*)*")
PERSONAL = re.compile(r"(?:he|she)\b", re.IGNORECASE)
PLACE_BEFORE = re.compile(r"\b(?:at|in|on|near|into|across|over|off|beside|outside|inside)\s+(?:the\s+)?$", re.IGNORECASE)
PRONOUN = re.compile(r"(?:he|she|they|it)\b", re.IGNORECASE)
# A sentence that opens by referring back ("He ...", "Its first captain ...").
REFERRING = re.compile(r"(?:he|she|they|it|his|her|its|their)\b", re.IGNORECASE)
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


def with_referents(sents: list[str]) -> list[str]:
    """``sents`` for ranking: a sentence that opens with a pronoun ("It was built in 1790", "Its
    first master ...") led by the name the sentence before opens with, which it is about."""
    out = list(sents)
    for i in range(1, len(sents)):
        if REFERRING.match(sents[i]) and not PERSONAL.match(sents[i]):
            named = _opening_name(sents[i - 1]) or _opening_phrase(sents[i - 1])
            # "Its gates ..., and the dock holds ...": the sentence names it by its head noun
            if named and not overlap(named.split()[-1], sents[i]):
                out[i] = f"{named}: {sents[i]}"
    return out


def _opening_phrase(s: str) -> str | None:
    """The noun phrase a sentence opens with, where it opens with "the" ("The aqueduct has 9
    arches"): the words up to its verb."""
    parts = split_subject(s)
    if parts and re.match(r"the\s+\w", parts[0], re.IGNORECASE) and len(parts[0].split()) <= 4:
        return parts[0]
    return None


def subject_of(sents: list[str], i: int, at: int) -> str | None:
    """Who the clause at ``at`` of sentence ``i`` is about. The name just before it ("founded by
    Ann Pell, then 52"); for a clause that opens with a verb ("... and died in 1890 at the age
    of 70"), the sentence's subject; for a pronoun, the first name before it ("he", "she": in
    its sentence, else the one before) or the name a sentence opens with ("it", "they", which
    may stand for a thing)."""
    s = sents[i]
    start = clause_at(s, at)[0]
    lead = LINK.sub("", s[start:at])
    names = _proper_names(s, at)
    pronoun = PRONOUN.match(lead)
    at_pronoun = start + s[start:at].find(lead) if pronoun else 0
    words = lead.split()
    while len(words) > 1 and "ADV" in parts_of_speech(words[0]) and not parts_of_speech(words[0]) & {"VERB", "NOUN"}:
        words = words[1:]  # "and later served as president": the verb after the adverb
    antecedent = _proper_names(s, start)
    if pronoun is None and re.match(r"\s*(?:who|which)\b", s[start:at]) and antecedent and s[:start].rstrip(" ,").endswith(antecedent[-1][1]):
        # "sold it to the Acme Company, which ran it ...": the name the relative clause follows
        prior_clauses = [c for c in clause_bounds(s) if c[1] <= start]
        if not (len(prior_clauses) > 1 and _appositive(s[slice(*prior_clauses[-1])], s[slice(*prior_clauses[-2])])):
            return antecedent[-1][1]
    if pronoun is None and words and words[0][:1].islower() and inflected_verb(words[0]):
        # The clause shares the subject of the clause before it (or of the one before that).
        prior_clauses = [c for c in clause_bounds(s) if c[1] <= start]
        for k in range(len(prior_clauses) - 1, -1, -1):
            a, b = prior_clauses[k]
            if k and _appositive(s[a:b], s[slice(*prior_clauses[k - 1])]):
                continue
            prior = LINK.sub("", s[a:b])
            if PRONOUN.match(prior):
                pronoun, at_pronoun = PRONOUN.match(prior), a + s[a:b].find(prior)
                break
            opening = prior.split()[:1]
            if opening and opening[0][:1].islower() and inflected_verb(opening[0]):
                continue  # "played 41 matches for Scotland": its subject is further back too
            if re.match(r"(?:in|on|at|of|by|with|from|near|for)\s", prior, re.IGNORECASE):
                continue  # "in a rented barn near Keld": a phrase about the subject, not it
            parts = split_subject(prior)
            if parts is None and re.match(r"(?:the|its|their|his|her)\s", prior, re.IGNORECASE) and not _proper_names(prior, len(prior)):
                return prior.strip()  # "Its first hostel, ..., opened the following year"
            copula = re.search(r"\b(?:was|were|is|are|became|becomes)\b", prior, re.IGNORECASE)
            if parts and not copula and re.match(r"(?:the|its|their|his|her)\s", parts[0], re.IGNORECASE) and not _proper_names(parts[0], len(parts[0])):
                return parts[0]  # "The guild merged with its rival across the river": the guild
            named = _proper_names(s[a:b], b - a)
            if named:
                return named[0][1]
        else:
            return None
    if pronoun is None:
        # "X, a pupil of Y, who ...": past an appositive to the name it describes
        prior_clauses = [c for c in clause_bounds(s) if c[1] <= start]
        if len(prior_clauses) > 1 and _appositive(s[slice(*prior_clauses[-1])], s[slice(*prior_clauses[-2])]):
            names = _proper_names(s, prior_clauses[-2][1]) or names
        # "was drowned off Lundy in 1921, aged 40": a name after a preposition of place is where,
        # not who ("founded by Ann Pell, then 52" keeps its agent)
        names = [(k, n) for k, n in names if not PLACE_BEFORE.search(s[:k])] or names
        return names[-1][1] if names else None
    return antecedent_of(sents, i, at_pronoun, pronoun.group(0))


def topic_person(sents: list[str]) -> tuple[str, str] | None:
    """``(name, "he" or "she")`` of the person a biography is about: the name its first sentence
    opens with, followed by life dates in brackets ("Ada Byrne (1862–1931) was ..."), and the
    pronoun the text first uses after it. A "he" or "she" with no name before it in its own
    sentence is that person (a biography's pronouns keep to its subject)."""
    if not sents:
        return None
    name = _opening_name(sents[0])
    if name is None or not re.match(r"\s*\((?:born |née |nee |b\. |c\. )?[^)]*\d{3,4}", sents[0][sents[0].find(name) + len(name) :]):
        return None
    first = next((m.group(0).lower() for s in sents[1:] for m in re.finditer(r"\b(?:he|she)\b", s, re.IGNORECASE)), None)
    return (name, first) if first else None


def antecedent_of(sents: list[str], i: int, at: int, pronoun: str) -> str | None:
    """The name the pronoun at ``at`` of sentence ``i`` stands for: "he" or "she" the first name
    before it in its sentence, else in the sentence before; "it" or "they" the name a sentence
    opens with (they may stand for a thing)."""
    s = sents[i]
    before = _proper_names(s, at)
    if not before:
        if i == 0:
            return None
        topic = topic_person(sents)
        if topic and PERSONAL.fullmatch(pronoun) and pronoun.lower() == topic[1]:
            return topic[0]
        s = sents[i - 1]
        before = _proper_names(s, len(s))
    if PERSONAL.fullmatch(pronoun):
        return before[0][1] if before else None
    return _opening_name(s)


def _names_own_subject(clause: str) -> bool:
    """Whether ``clause`` opens with a noun phrase of its own ("the rebuilding took", "coal barges
    continued"), not with its verb ("and held the post") or a pronoun."""
    words = LINK.sub("", clause).split()
    if len(words) < 2 or PRONOUN.fullmatch(words[0]) or _proper_names(words[0], len(words[0])):
        return False
    if re.fullmatch(r"(?:the|a|an)", words[0], re.IGNORECASE):
        return True
    # "coal barges continued"; "buses continued" (a noun that may be a verb, then a verb);
    # "quarrying began" (a gerund, then a verb)
    noun = "NOUN" in parts_of_speech(words[0].lower()) or words[0].lower().endswith("ing")
    return noun and (not inflected_verb(words[0]) or inflected_verb(words[1]))


APPOSITIVE = re.compile(r"^(?:a|an|the|one of)\s", re.IGNORECASE)


def _appositive(clause: str, before: str) -> bool:
    """Whether ``clause`` is a noun phrase describing the name that ends ``before`` ("Hugh
    Lyle, | a nephew of the banker Oswald Crane,"): it names no new subject."""
    names = _proper_names(before, len(before))
    ends_with_name = bool(names) and before.rstrip().endswith(names[-1][1])
    # no auxiliary: "the mill was sold" has its own subject and verb ("a mining engineer" has none)
    return ends_with_name and bool(APPOSITIVE.match(clause)) and not any("AUX" in parts_of_speech(w) for w in clause.split())


def is_later(m: re.Match[str]) -> bool:
    """Whether a LATER match ("two years later", "the following year") counts forward."""
    return (m.group("dir") or "").lower() in {"later", "afterwards", "after"} or (m.group("one") or m.group("rel") or "").lower() in {
        "following", "next", "after"
    }


def is_after(m: re.Match[str]) -> bool:
    """Whether an OFFSET match ("N years after X") dates its clause after X."""
    return m.group("dir").lower().startswith(("after", "later"))


def _statement(who: str | None, clause: str) -> str:
    """``clause`` as a sentence about ``who``: its opening pronoun replaced by the name."""
    if who and PRONOUN.match(clause):
        clause = PRONOUN.sub("", clause, count=1).strip()
    return f"{who} {clause}." if who and who not in clause else f"{clause}."


def year_before(s: str, at: int) -> int | None:
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
        n = 1.0 if m.group("one") or m.group("rel") else value_of(m.group("n") or "")
        if n is None:
            return None
        later = is_later(m)
        year = int(year + n if later else year - n)
    return year


def _named_before(sents: list[str], i: int, clause: str) -> int | None:
    """The last year (not a birth's) of the nearest of the two sentences before ``i`` that shares
    a name with ``clause``."""
    names = {t for _, name in _proper_names(clause, len(clause)) for t in name.lower().split()}
    for k in (i - 1, i - 2):
        if k < 0 or not names:
            break
        if names & {t for _, name in _proper_names(sents[k], len(sents[k])) for t in name.lower().split()}:
            return year_before(sents[k], len(sents[k]))
    return None


def implied_dates(sents: list[str], find_year: Callable[[str, str], int | None] | None = None) -> list[Dated]:
    """The dates the document implies: a birth year from an age at a dated event ("was 23 when
    he took the post in 1883"); the end of a term given by its length from a dated start
    ("appointed in 1898 and held the post for 24 years"); the start of one ended "after N
    years" ("retired in 1952 after 28 years in charge")."""
    out: list[Dated] = []
    for i, s in enumerate(sents):
        for m in (*AGE.finditer(s), *AGE_WHEN.finditer(s)):
            n = value_of(next((v for k in ("n", "old", "then", "time", "alone", "of") if (v := m.groupdict().get(k))), ""))
            if n is None or AGE_RANGE.match(s[m.end() :]):
                continue
            # "He was 61.": the pronoun is inside the match, so its clause is read to the end
            who = subject_of(sents, i, m.end() if m.groupdict().get("alone") else m.start())
            if m.group(0).startswith(","):  # "the architect Percy Lund, then 44,": the name just before
                named = _proper_names(s, m.start())
                who = named[-1][1] if named and s[: m.start()].rstrip().endswith(named[-1][1]) else who
            a, b = clause_at(s, m.start())
            if m.re is AGE_WHEN:  # "was 23 when he took the post in 1883": the event follows
                event = s[m.end() : clause_at(s, m.end())[1]]
                year = next(iter(years_in(event)), None)
            elif right_after := YEAR_AFTER.match(s, m.end()):  # "at the age of 19 in 1911"
                event, year = s[a:b].replace(m.group(0), ""), int(right_after.group(1))
            else:  # "died in 1801 at the age of 48": it precedes (a year after dates something else)
                event = s[a:b].replace(m.group(0), "")
                year = year_before(s, m.start())
                if year is None and any(m.groupdict().get(k) for k in ("then", "time", "alone")) and i:  # at the time just told of
                    year = year_before(sents[i - 1], len(sents[i - 1]))
            if year is None and find_year is not None and who:
                year = find_year(f"{who} {event}", s)  # the event dated elsewhere ("at the opening")
            if year is not None and who:
                born = int(year - n)
                out.append(Dated(f"{who} was born in {born}.", born, f"{year} - {num_text(n)}", s))
        for m in FOR_YEARS.finditer(s):
            n = value_of(m.group("n"))
            a, b = clause_at(s, m.start())
            since = year_before(s, m.start())
            stated = re.match(r"\s+(?:from|starting in|beginning in)\s+(1[0-9]{3}|20[0-9]{2})\b", s[m.end() :])
            if stated:  # "served as president for 12 years from 1975"
                since = int(stated.group(1))
            if since is None and ";" in s[: m.start()]:
                # "In 1902 the roof was found to be rotten; the work took two years": a
                # statement without a year of its own is at the time its sentence told last
                since = year_before(s, s.rfind(";", 0, m.start()))
            # "... first coach in 1930. He coached the side for 12 years.": the year before, where
            # that sentence tells of the same activity (not "joined as a deckhand in 1874")
            if since is None and i and REFERRING.match(s) and overlap(sents[i - 1], s[: m.start()]):
                since = year_before(sents[i - 1], len(sents[i - 1]))
            if since is None and not stated:
                # "Holt served the chapel for 32 years": from the last year of the sentence (of
                # the two before) that names the same person ("opened in 1851, with Ezra Holt")
                since = _named_before(sents, i, s[: m.start()])
            perfect = PLUPERFECT.search(s[a : m.start()]) or PERFECT.search(s[max(0, a - 12) : m.start()])
            if perfect and n is not None and not stated:
                # "opened in 1931; before that the club had met at the Crown for 40 years": a term
                # that had ended at the last event dated before it began N years earlier
                dates = [y for y in YEAR.finditer(s, 0, m.start()) if not BORN_BEFORE.search(s[: y.start()])]
                who = subject_of(sents, i, m.start())
                own = split_subject(LINK.sub("", s[a : m.start()]).strip())
                if own and re.match(r"(?:the|its|their|his|her|a|an)\s", own[0], re.IGNORECASE):
                    who = None  # "the old railings had stood for 95 years": the clause names its own subject
                if dates and (who or own):
                    begun = int(int(dates[-1].group(0)) - n)
                    clause = LINK.sub("", re.sub(r"^(?:before that|until then|by then)\s+", "", s[a : m.start()].strip(), flags=re.IGNORECASE))
                    clause = re.sub(r"\b(?:had|having)\s+", "", clause).strip()
                    out.append(Dated(_statement(who, f"{clause} from {begun}"), begun, f"{dates[-1].group(0)} - {num_text(n)}", s, "start"))
                continue
            end_told = next((y for y in YEAR.finditer(s, m.end()) if not BORN_BEFORE.search(s[: y.start()])), None)
            if since is None and n is not None and end_told and not stated and ENDED.search(s, m.end(), end_told.start()):
                # "was run for 30 years by X, who retired in 1910": begun N years before its stated end
                begun = int(int(end_told.group(0)) - n)
                told = s[a : clause_at(s, end_told.start())[0]].rstrip(" ,;")
                out.append(Dated(f"{LINK.sub('', told)} from {begun}.", begun, f"{end_told.group(0)} - {num_text(n)}", s, "start"))
                continue
            if n is None or since is None or (years_in(s[m.end() : b]) and not stated):
                continue  # a term whose end is stated
            # "coal barges continued for ...", "a dance school that ran for ...": the clause names
            # its own subject; else it is the subject of the sentence's earlier clauses
            own_subject = _names_own_subject(s[a : m.start()])
            who = None if own_subject else subject_of(sents, i, m.start())
            lead = LINK.sub("", s[a : m.start()]).split()
            if who is None and a and lead and inflected_verb(lead[0]):
                # "One engine, No. 4, was found in 1960 and restored over seven years": the noun
                # phrase the sentence opens with, where its first clause is one
                opening = s[: clause_bounds(s)[0][1]]
                if len(opening.split()) <= 4 and not any(inflected_verb(w) for w in opening.split()):
                    who = opening
            if who is None and not own_subject:
                continue
            end = int(since + n)
            rest = s[m.end() + (stated.end() if stated else 0) : b]
            verb = re.match(r"took|lasted", m.group(0), re.IGNORECASE)  # "the work took until 1904"
            clause = LINK.sub("", s[a : m.start()] + (f"{verb.group(0)} " if verb else "") + f"until {end}" + rest).rstrip(" .")
            out.append(Dated(_statement(who, clause), end, f"{since} + {num_text(n)}", s, "end"))
        for m in TERM_OF.finditer(s):
            n = value_of(m.group("n"))
            a, b = clause_at(s, m.start())
            since = year_before(s, m.start())
            if n is None or since is None or years_in(s[m.end() : b]):
                continue
            end = int(since + n)
            clause = LINK.sub("", s[a:b]).rstrip(" .")
            out.append(Dated(f"{clause}; the {m.group('noun')} ends in {end}.", end, f"{since} + {num_text(n)}", s, "end"))
        for m in ANNIVERSARY.finditer(s):
            a, b = clause_at(s, m.start())
            word = (m.group("word") or "").lower()
            n = float(CENTURIES[word]) if word else value_of(m.group("n"))
            if n is None or years_in(s[a:b]) or find_year is None:
                continue  # a dated anniversary states its year
            # counted from the beginning of what the clause is about
            subject = re.sub(r"\b(?:its|their|his|her)\b", "", s[a : m.start()], flags=re.IGNORECASE)
            # a thing begins once: the earliest of the years its beginnings are told with
            began = min((y for verb in BEGUN if (y := find_year(f"{subject} {verb}", s)) is not None), default=None)
            if began is None:
                continue
            clause = LINK.sub("", s[a:b]).rstrip(" .")
            out.append(Dated(f"{clause} in {int(began + n)}.", int(began + n), f"{began} + {num_text(n)}", s, "event"))
        for m in FOR_UNTIL_EVENT.finditer(s):
            # "ran it for 30 years before selling it", "lay flooded for 25 years before the council
            # bought it": the event after "before" is dated N years after the last year told
            n = value_of(m.group("n"))
            event = m.group("event").strip()
            if n is None or years_in(event):
                continue  # a dated event is FOR_BEFORE's
            since = year_before(s, m.start())
            if since is None and i:
                since = next((year_before(p, len(p)) for p in (sents[i - 1], sents[i - 2] if i > 1 else "") if years_in(p)), None)
            if since is None:
                continue
            year = int(since + n)
            own = split_subject(event)  # "the council bought it" has its own subject; "selling it" not
            who = None if own and own[1] else subject_of(sents, i, m.start())
            out.append(Dated(_statement(who, f"{event} in {year}"), year, f"{since} + {num_text(n)}", s, "event"))
        for m in LATER.finditer(s):
            # "entered service in the following year", "had reached Dunford two years earlier"
            n = 1.0 if m.group("one") or m.group("rel") else value_of(m.group("n") or "")
            anchor = year_before(s, m.start())
            if anchor is None and i:  # dated from the last year the text gave
                anchor = next((year_before(p, len(p)) for p in (sents[i - 1], sents[i - 2] if i > 1 else "") if years_in(p)), None)
            if n is None or anchor is None:
                continue
            later = is_later(m)
            year = int(anchor + n if later else anchor - n)
            a, b = clause_at(s, m.start())
            clause = LINK.sub("", re.sub(r"(?:\bin )?" + re.escape(m.group(0)), f"in {year}", s[a:b], count=1)).rstrip(" .")
            # "quarrying began the following spring": a clause with a subject of its own
            who = None if _names_own_subject(s[a : m.start()]) else subject_of(sents, i, m.start())
            out.append(Dated(_statement(who, clause), year, f"{anchor} {'+' if later else '-'} {num_text(n)}", s, "event"))
        for m in LIFE.finditer(s):
            # "the merchant Edmund Sayer (1611–1679)": a life's two dates
            names = _proper_names(s, m.start())
            if names and names[-1][0] + len(names[-1][1]) + 12 >= m.start():
                who = names[-1][1]
                out.append(Dated(f"{who} was born in {m.group('born')}.", int(m.group("born")), m.group("born"), s))
                out.append(Dated(f"{who} died in {m.group('died')}.", int(m.group("died")), m.group("died"), s, "event"))
        for m in FOR_BEFORE.finditer(s):
            # "had been a councillor for eleven years before entering Parliament in 1987"
            n = value_of(m.group("n"))
            a, _b = clause_at(s, m.start())
            who = subject_of(sents, i, m.start())
            if n is None or not who:
                continue
            start = int(int(m.group("year")) - n)
            clause = LINK.sub("", s[a : m.start()]).strip()
            out.append(Dated(_statement(who, f"{clause} from {start}"), start, f"{m.group('year')} - {num_text(n)}", s, "start"))
        for m in OFFSET.finditer(s):
            # "ground flour again in 1986, 75 years after the gale had stopped it": the gale's year
            n = value_of(m.group("n"))
            dated = re.search(r"\b(1[0-9]{3}|20[0-9]{2}),?\s*$", s[max(0, m.start() - 8) : m.start()])
            if n is None or dated is None:
                continue
            year = int(int(dated.group(1)) - n if is_after(m) else int(dated.group(1)) + n)
            sign = "-" if is_after(m) else "+"
            event = m.group("event").strip()
            if PROPER.fullmatch(event):
                # "Ann was born in 1870, four years before Ivy": the same predicate, of Ivy
                main = s[clause_at(s, m.start() - 8)[0] : m.start()]
                said = re.sub(r"\s*\bin\s+(?:1[0-9]{3}|20[0-9]{2}),?\s*$", "", main).strip()
                predicate = split_subject(said)
                if predicate and predicate[1]:
                    kind = "birth" if re.search(r"\bborn\b", predicate[1]) else "event"
                    out.append(Dated(f"{event} {predicate[1]} in {year}.", year, f"{dated.group(1)} {sign} {num_text(n)}", s, kind))
                    continue
            out.append(Dated(f"{event} in {year}.", year, f"{dated.group(1)} {sign} {num_text(n)}", s, "event"))
        for m in AFTER_YEARS.finditer(s):
            n = value_of(m.group("n"))
            a, _b = clause_at(s, m.start())
            ended = years_in(s[a : m.start()])
            who = subject_of(sents, i, m.start())
            own = split_subject(LINK.sub("", s[a : m.start()]).strip())
            if not who and own and re.match(r"(?:the|its|their)\s", own[0], re.IGNORECASE):
                who = own[0]  # "the sheep fair closed in 1990 after 300 years": a thing's own subject
            if n is None or not ended or not who:
                continue
            start = int(ended[-1] - n)
            text = f"{who}'s {num_text(n)} years{m.group('rest')} began in {start}."
            out.append(Dated(text, start, f"{ended[-1]} - {num_text(n)}", s, "start"))
    return out
