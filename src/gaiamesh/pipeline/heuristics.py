"""The pipeline's heuristics: every hand-written rule of the pipeline that reads English.

A heuristic here is a word list or a pattern that recognises English words or phrasings (the
wh-forms of questions, month names, number words, titles, pronouns, determiners, the words that
join clauses) and decides something from them. It is a heuristic, not a reading: it knows
English as its author wrote it down, and it is wrong where a writer says the same thing
otherwise. What the model decides (each reading, the choice among candidates, reranking) is in
``read.py``, ``rerank.py`` and ``reason.py``; rules that read only format (digits, whitespace,
capitals, punctuation) stay with the code that uses them.

Each rule is listed, with what it decides and its measured worth (quality with and without it
on the held-out sets), in docs/strategies.md ("Heuristics"); the measurement is
docs/results/2026-11-27-heuristics.md. The hop splitter (``hops.py``) and the follow-up
resolver (``followup.py``) are procedures built on the word classes below and are heuristics
as a whole; their modules say so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from lemminflect import getAllLemmas

# --- what a question asks for -------------------------------------------------------------------

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


def person_noun(word: str) -> bool:
    """Heuristic (English role nouns): a noun that names a person by a role: one of
    :data:`PERSON_NOUNS`, an agent noun made from a verb ("printer" from print, "teacher",
    "runner", "pianist", "librarian") that is not itself a verb ("tower", "number" and "water"
    are), or a compound in -man/-woman. Decides that "which engineer" asks for a person, and
    where the hop splitter finds a role ("the first captain of X")."""
    w = word.lower()
    if w in PERSON_NOUNS:
        return True
    if not w.isalpha() or getAllLemmas(w).get("VERB"):
        return False
    if w.endswith(("ist", "ian")) and len(w) > 5:
        return True
    if w.endswith(("man", "woman", "person")) and len(w) > 6:  # alderman, businessman, spokesperson
        return True
    if w.endswith(("er", "or")) and len(w) > 4:
        stems = {w[:-1], w[:-2]} | ({w[:-3]} if w[-3] == w[-4] else set())  # engrave-r, teach-er, runn-er
        return any(getAllLemmas(stem).get("VERB") and stem in getAllLemmas(stem)["VERB"] for stem in stems)
    return False


def asked_kind(question: str) -> str:
    """Heuristic (English question forms): the kind of answer a question asks for, from its
    wh-phrase: ``year`` ("in which year"), ``date`` ("on what date"), ``when``, ``number``
    ("how many", "what was the total cost"), ``person`` ("who", "which engineer"), ``place``
    ("where", "which town"), else ``any``. Decides the typed preference of retrieval, the spans
    offered as candidates and the form an answer must have (``answer_type.expected_type``)."""
    q = " ".join(question.lower().split())
    if re.search(r"\b(?:what|which|in what|in which)\s+(?:year|decade|century)\b", q):
        return "year"
    if re.search(r"\b(?:what|which)\s+(?:date|day)\b", q):
        return "date"
    if q.startswith("when"):
        return "when"
    if re.search(
        r"\bhow\s+(?:many|much|long|high|tall|far|old|deep|wide|big|large|heavy|fast)\b", q
    ) or re.search(
        r"\bwhat\s+(?:is|was|were|are)\s+the\s+(?:number|total|amount|cost|price|length|height|population|capacity|area)\b",
        q,
    ):
        return "number"
    if re.match(r"(?:who|whom|whose)\b", q) or re.search(r"\bby\s+whom\b", q):
        return "person"
    # "which board member", "what engineer": the wh-phrase's head names a person by a role
    m = re.match(r"(?:\w+\s+)?(?:which|what)\s+([a-z-]+)(?:\s+([a-z-]+))?", q)
    if m and any(w and person_noun(w) for w in m.groups()):
        return "person"
    if q.startswith("where") or re.search(
        r"\b(?:which|what|in which|in what)\s+(?:city|town|village|country|port|island|region|place)\b", q
    ):
        return "place"
    return "any"


def asks_who(question: str) -> bool:
    """Heuristic (a question opening with "Who ", as written): it asks for a person by name, so
    the bridge of a two-fact question read as a description ("old granary", which may answer
    "Which building holds the archive?") does not answer it (``extract.find_bridge``)."""
    return question.startswith("Who ")


# --- spans of a kind ----------------------------------------------------------------------------

MONTH = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November|December"
    r"|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.?"
)
"""Heuristic (English month names, and their abbreviations): the month of a date; and a
capitalised "May" is no name."""
YEAR = r"(?:1[0-9]{3}|20[0-9]{2})"  # format, not English: the digits of a year, which DATE builds on
DATE = re.compile(
    rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+{MONTH}(?:,?\s+{YEAR})?\b"
    rf"|\b{MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+{YEAR})?\b"
    rf"|\b{MONTH}\s+{YEAR}\b"
)
"""Heuristic (English date forms: "2 May 1981", "May 2nd, 1981", "May 1981"): the spans that
answer "on what date" and "when", and the numbers that are part of a date, not a count."""

NUMBER_WORDS = (
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety "
    "hundred thousand million billion dozen"
).split()
"""Heuristic (English number words): a number written in words ("twelve", "forty-two") is a
quantity, and an answer in words has the form "how many" asks for."""
SCALE_WORDS = ("hundred", "thousand", "million", "billion")


def quantity_pattern(number_words: Iterable[str] = NUMBER_WORDS) -> re.Pattern[str]:
    """A quantity: a number (digits, or ``number_words``), an optional scale word ("2.5
    million"), a per cent, and up to two lower-case unit words ("31 metres high")."""
    # Longest first and whole words only: "eighty" is not "eight" followed by "y", "fourteen" not "four".
    alt = "|".join(sorted(number_words, key=len, reverse=True))
    digits = r"\d(?:[\d,]*\d)?(?:\.\d+)?(?:\+(?=\s))?(?!st\b|nd\b|rd\b|th\b)"
    words = rf"|(?:{alt})(?:-(?:{alt}))?\b" if alt else ""
    num = rf"(?:[$£€]\s?)?(?:{digits}{words})"
    scale = "|".join(SCALE_WORDS)
    and_more = rf"(?:\s+and\s+(?:{alt})(?:-(?:{alt}))?\b)?" if alt else ""
    return re.compile(
        rf"(?<![\w.])(?P<number>(?i:{num}(?:\s+(?:{scale}){and_more})?))"
        r"(?:\s*(?:%|per\s?cent|percent))?(?:\s+[a-z][a-z-]*){0,2}"  # units are lower-case words
    )


QUANTITY = quantity_pattern()
"""Heuristic (English number and scale words, "per cent"): the quantities of a sentence."""

TITLES = frozenset(
    "dr mr mrs ms prof sir dame lord lady captain capt professor president minister prime king queen "
    "saint st mount lake river".split()
)
"""Heuristic (English titles and place words): dropped from the front of a name ("Dr Ann Lee"
answers "who" as "Ann Lee")."""
SENTENCE_STARTERS = frozenset(
    "the a an in on at after before today since during its his her their it this".split()
)
"""Heuristic (English function words that open sentences): a capitalised "The" or "After"
opening a run of capitals is not part of the name."""


# Words that may open a sentence before a count ("Over 300 ships sailed", "Some 40 ...").
BEFORE_COUNT = frozenset("around nearly only another just almost roughly fewer some about over".split())
"""Heuristic (English words that open a sentence before a count): with the stop words, a
capitalised word that only opens the sentence does not make the number after it part of a
name ("Over 300 ships" counts ships; "Route 66" names a road)."""

TRAILERS = frozenset(
    "through across along around against per long high tall wide deep old away later earlier ago "
    "apart each every only just nearly almost about roughly".split()
)
"""Heuristic (English adverbs and prepositions): with the stop words, the words a quantity
span may end on that are not its unit ("23 locks along" is "23 locks")."""

# --- clauses and what points back ---------------------------------------------------------------

POINTS_BACK = re.compile(r"(?:It|He|She|They|This|These|Its|His|Her|Their)\b")
"""Heuristic (English pronouns opening a sentence): the sentence points back at the one before
it ("It was designed by Ann Lee"), so the two are a fact together, and a clause after "; she"
is still about her."""
CLAUSE = re.compile(r",?\s+(?:while|whereas|but)\s+|;\s+")
"""Heuristic (English conjunctions that join contrasting clauses): where a sentence joins two
clauses that may be about different things."""

DETERMINER = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)
"""Heuristic (English articles): a leading article is not part of an answer ("the Solveig"),
and a phrase after a name that opens with one describes it ("Tarnby, the town where ...")."""


def without_the(reading: str) -> str:
    """Heuristic (a leading English "the", in any case): the model's reading "the Solveig" of a
    two-fact question's bridge names the Solveig; only "the" is dropped, unlike
    :data:`DETERMINER` (``extract.find_bridge``)."""
    return reading[4:] if reading.lower().startswith("the ") else reading

# --- the hop splitter's word classes (hops.py) -------------------------------------------------
RELATIVE_PRONOUNS = frozenset({"who", "that", "which", "whom"})
DETERMINERS = frozenset({"the", "a", "an"})
PREPOSITIONS = frozenset({"in", "on", "at", "of", "from", "by", "to", "for", "with", "since", "during"})
AUXILIARIES = frozenset({"did", "does", "do", "was", "were", "is", "are", "has", "have", "had"})
COPULAS = frozenset({"was", "were", "is", "are"})
CLAUSE_OPENERS = frozenset({"he", "she", "they", "it", "we", "first", "later"})
"""Heuristic (English closed word classes): the words by whose roles the hop splitter tells a
two-fact question's relative clause or role from a one-fact question."""

# --- follow-up questions (followup.py) ---------------------------------------------------------
PERSON_PRONOUNS = frozenset({"he", "him", "his", "she", "her", "hers"})
THING_PRONOUNS = frozenset({"it", "its"})
POSSESSIVE_PRONOUNS = frozenset({"his", "its", "hers"})
CONVERSATION_OPENERS = frozenset({"and", "so", "then", "also", "now"})
NOT_A_NOUN = frozenset({"in", "on", "at", "by", "for", "to", "from", "with", "as", "and", "or", "?", "."})
"""Heuristic (English third-person pronouns and conversational openers): which words of a
follow-up question point back at an earlier turn ("And in which year was it made?"), and
whether "her" is a possessive (not before a preposition: "born to her")."""
DEFINITE = re.compile(r"\bthe\s+([a-z]+)\b")
"""Heuristic ("the" and a common noun): a definite description may name something said before
("the museum" for an earlier "Veldt Glass Museum")."""

# --- retrieval (text.py) -----------------------------------------------------------------------
STOPWORDS = frozenset(
    """a an the of in on at to for from by with and or but is are was were be been being it its this that
    these those as what which who whom whose when where why how did do does done has have had not no
    than then there their they them he she his her we our you your i me my into over under about after
    before during between many much more most some any all each""".split()
)
"""Heuristic (English stop words): the words that are no terms of a text for BM25, for
matching answers to facts and for every overlap of words."""
PARAPHRASES = [
    "found establish creat form launch",
    "build construct erect complet",
    "open inaugur unveil launch",
    "close shut end ceas stop",
    "begin start commenc",
    "finish end complet conclud stop",
    "die death kill",
    "born birth",
    "lead head direct run manag chair",
    "buy bought purchas acquir",
    "sell sold",
    "win won award prize",
    "design plan architect",
    "discov identifi detect spot",
    "high height tall",
    "long length",
    "cost price spent fund",
    "visit visitor",
    "name call titl",
]
"""Heuristic (English verbs and nouns for one event, stemmed): questions paraphrase the
document ("who founded" / "was established by"); a query term brings in its group at half
weight in retrieval, and counts as what a question asks in ``reason``'s clause ties."""
ABBREVIATION = re.compile(
    r"(?:\b(?:Dr|Mr|Mrs|Ms|Prof|St|Mt|Jr|Sr|No|Capt|Gen|Col|Lt|Sgt|Rev|Fr|Co|Inc|Ltd|vs|approx)|\b[A-Z]"
    # life dates: "(c. 1702 – 1771)", "(b. 1790)", "(d. 1861)", "(fl. 1820s)"
    r"|\((?:c|ca|b|d|fl))\.$"
)
"""Heuristic (English abbreviations, initials, life dates): a full stop after them does not end
the sentence ("Dr. Ann Lee" is one sentence)."""
