"""Question forms: a question reworded into the forms the plan templates read.

The templates read one wording of each kind of question ("how many years after X did Y",
"how old was X when Y", "how much did X raise"). Other writers ask the same things in other
words ("how long after X did Y", "what age was X at the time Y", "what sum did X raise"). This
module rewrites those common English variants of question syntax into the templates' wording;
it knows nothing about any document or task. The planner tries each template on the
rewording first (the wording the template was written for), then on the question as asked.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from lemminflect import getInflection, getLemma

from .phrases import parts_of_speech, split_subject

Rewrite = tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]

# Units a question may name for its number; a length unit makes "how long" a length, not a time.
_LENGTH_UNITS = (
    r"(?:yards?|feet|foot|metres?|meters?|miles?|kilometres?|kilometers?|inches|inch|chains?|furlongs?)"
)
_TIME_WORDS = re.compile(r"\b(?:after|before|since|until|till|later|earlier)\b", re.IGNORECASE)
_COPULA = r"(?:is|are|was|were|has|have|had|do|does|did)"


_VERB_OF = {
    "increase": "increase",
    "rise": "rise",
    "growth": "grow",
    "fall": "fall",
    "drop": "drop",
    "decline": "decline",
    "decrease": "decrease",
    "change": "change",
}


def _unit_to_end(m: re.Match[str]) -> str:
    # "What sum, in pounds, did X raise?" -> "What sum did X raise, in pounds?"
    return f"{m.group('head')} {m.group('rest')}, in {m.group('unit')}"


def _leading_unit(m: re.Match[str]) -> str:
    # "In tons, what was ...?" -> "What was ..., in tons?"
    rest = m.group("rest")
    return f"{rest[:1].upper()}{rest[1:]}, in {m.group('unit')}"


def _each_of(m: re.Match[str]) -> str:
    # "between the releases of A and B" -> "between the release of A and the release of B"
    noun, b = m.group("noun"), m.group("b")
    if re.match(r"(?:its|their|his|her)\b|the \w+ of\b", b, re.IGNORECASE):
        return m.group(0)  # "the openings of A and the closing of B": each already has its own
    lemma = getLemma(noun.lower(), upos="NOUN")
    single = lemma[0] if lemma else noun
    if single.lower() == noun.lower():
        return m.group(0)  # not a plural: "the opening of A and B" is one event of both
    return f"between the {single} of {m.group('a')} and the {single} of {b}"


_WH = r"(?:how|what|when|which|who|whom|whose|in what|in which|for how|by how|at what|to what)\b"
# "at his death" -> "when he died": the events of a life a question dates or ages by
_LIFE_EVENTS = {"death": "died", "retirement": "retired", "marriage": "married"}
_PRONOUN_OF = {"his": "he", "her": "she", "its": "it", "their": "they"}


def _lower_article(phrase: str) -> str:
    """A phrase that opened the sentence, to stand inside one: "The mill" -> "the mill"."""
    first = phrase.split()[0]
    if first.lower() in {"the", "a", "an", "its", "their", "his", "her"}:
        return first.lower() + phrase[len(first) :]
    return phrase


def _fronted(text: str) -> str:
    """A phrase before the question word moves to where the templates read it: "Of the crew,
    how many ..." -> "How many of the crew ..."; "Compared with 1900, how many more ..." ->
    "... than 1900"; "Counting X, ..." -> "..., counting X"; "In 1905, what ..." -> "What ... in 1905"."""
    m = re.match(rf"^(?P<front>[^,;?]+?),\s*(?P<q>{_WH}.+)$", text, re.IGNORECASE)
    if m is None:
        return text
    front, q = m.group("front").strip(), m.group("q")
    if re.fullmatch(r"in (?!the\b)[a-z ]+", front, re.IGNORECASE):
        return text  # "In tonnes, how much ...": a unit, moved by REWRITES
    part = re.match(r"(?:of|among|amongst) (?P<whole>.+)$", front, re.IGNORECASE)
    if part and re.match(r"how many\b", q, re.IGNORECASE):
        return re.sub(r"^how many\b", f"how many of {part.group('whole')}", q, count=1, flags=re.IGNORECASE)
    versus = re.match(
        r"(?:compared (?:with|to)|in comparison (?:with|to)|as against|relative to) (?P<other>.+)$",
        front,
        re.IGNORECASE,
    )
    if versus:
        return f"{q} than {versus.group('other')}"
    waited = re.match(
        r"how many years (?:passed|elapsed|went by) (?:before|until) (?P<clause>.+)$", q, re.IGNORECASE
    )
    after = re.match(r"(?:after|following) (?P<event>.+)$", front, re.IGNORECASE)
    if waited and after:
        # "After the fire, how many years passed before the hall was rebuilt?"
        return f"how many years after {after.group('event')} {_inverted(waited.group('clause'))}"
    once = re.match(r"(?P<conj>once|after|when) (?P<clause>.+)$", front, re.IGNORECASE)
    if once and split_subject(once.group("clause")) is not None:
        # "when" keeps its meaning ("how many years had X held it when Y"); "once" is "after"
        conj = "when" if once.group("conj").lower() == "when" else "after"
        return f"{q} {conj} {once.group('clause')}"
    if re.match(r"(?:counting|including) ", front, re.IGNORECASE):
        return f"{q}, {front[0].lower()}{front[1:]}"
    if re.match(r"(?:in|on|at|during|after|before|from|until|between|over)\b", front, re.IGNORECASE):
        return f"{q} {front[0].lower()}{front[1:]}"
    return text


_CONTRACTIONS = [
    (re.compile(r"\b(what|how|when|who|where|which|that|it)'s\b", re.IGNORECASE), r"\1 is"),
    (re.compile(r"\bcan't\b", re.IGNORECASE), "can not"),
    (re.compile(r"\bwon't\b", re.IGNORECASE), "will not"),
    (re.compile(r"\b(\w+)n't\b", re.IGNORECASE), r"\1 not"),
]
_AUXILIARY = frozenset("was were is are had has have could would will can did does do".split())


def _inverted(clause: str) -> str:
    """A statement as the rest of a question: "the roof was mended" -> "was the roof
    mended"; "the choir moved" -> "did the choir move"."""
    words = clause.split()
    for i, word in enumerate(words[1:], 1):
        if word.lower() in _AUXILIARY:
            return " ".join([word.lower(), _lower_article(" ".join(words[:i])), *words[i + 1 :]])
    # the verb: the first word in a past form ("The ferry sailed": not "ferry"), or else the
    # first word that can be a verb
    for i, word in enumerate(words[1:], 1):
        lemma = getLemma(word.lower(), upos="VERB")
        if lemma and lemma[0] != word.lower() and word.lower() in getInflection(lemma[0], tag="VBD"):
            return " ".join(["did", _lower_article(" ".join(words[:i])), lemma[0], *words[i + 1 :]])
    parts = split_subject(clause)
    if parts is None:
        return clause
    subject, predicate = parts
    verb, *rest = predicate.split()
    lemma = getLemma(verb.lower(), upos="VERB")
    return " ".join(["did", _lower_article(subject), lemma[0] if lemma else verb, *rest])


def _asked_in_place(text: str) -> str:
    """A statement with its question word inside, as quizzes ask: "X was born in which year?" ->
    "In which year was X born?"; "The annexe opened how many years after the chapel?" -> "How
    many years after the chapel did the annexe open?"."""
    if re.match(rf"{_WH}|(?:{'|'.join(_AUXILIARY)})\b", text, re.IGNORECASE):
        return text  # already a question
    m = re.match(
        r"^(?P<statement>.+?) (?P<asked>(?:(?:in|on|at|for|over|by|after|before|from|to|during) )?"
        r"(?:a (?:span|period|total) of )?(?:what|which|when|how many|how much|how old|how long)\b.*)$",
        text,
        re.IGNORECASE,
    )
    if m is None or "," in m.group("statement") or split_subject(m.group("statement")) is None:
        return text  # (a phrase and a comma before the question word: see _fronted)
    asked = re.sub(r"^(\w+ )?a (?:span|period|total) of ", r"\1", m.group("asked"), flags=re.IGNORECASE)
    return f"{asked} {_inverted(m.group('statement'))}"


def _clause_then_later(text: str) -> str:
    """ "The forge closed; how many years later was it sold?" -> "How many years after the forge
    closed was it sold?" """
    m = re.match(
        r"^(?P<clause>[^;.?]+?)\s*[;.,]\s*how (?:many years|long) (?:later|afterwards|after that|after this) "
        r"(?P<rest>(?:was|were|did|had|could|would)\b.+)$",
        text,
        re.IGNORECASE,
    )
    if m is None:
        return text
    return f"how many years after {_lower_article(m.group('clause'))} {m.group('rest')}"


def _subject_first(text: str) -> str:
    """ "X had how many more N than Y?" -> "How many more N did X have than Y?" """
    m = re.match(
        r"^(?P<subj>[^,?]+?) (?P<verb>[a-z]+) how (?P<qty>many|much) (?P<cmp>more|fewer|less) (?P<what>.+?) "
        r"than (?P<other>.+)$",
        text,
        re.IGNORECASE,
    )
    if m is None or re.match(_WH, m.group("subj"), re.IGNORECASE):
        return text
    lemma = getLemma(m.group("verb").lower(), upos="VERB")
    verb = lemma[0] if lemma else m.group("verb")
    return f"how {m.group('qty')} {m.group('cmp')} {m.group('what')} did {_lower_article(m.group('subj'))} {verb} than {m.group('other')}"


def _by_how_much_comparative(text: str) -> str:
    """ "By how many feet was the spire taller than the tower?" -> "How many feet taller was the
    spire than the tower?" (the comparative is the first adjective in -er after the verb)."""
    m = re.match(
        r"^by how (?P<qty>many|much)(?P<unit>(?: [\w-]+){0,3}?) (?P<aux>was|were|is|are) (?P<rest>.+ than .+)$",
        text,
        re.IGNORECASE,
    )
    if m is None:
        return text
    words = m.group("rest").split()
    for i, word in enumerate(words[1:], 1):
        if word.lower() == "than":
            return text
        if (
            word.lower().endswith("er")
            and "ADJ" in parts_of_speech(word)
            and "NOUN" not in parts_of_speech(word)
        ):
            subject, rest = " ".join(words[:i]), " ".join(words[i + 1 :])
            return f"how {m.group('qty')}{m.group('unit')} {word} {m.group('aux')} {subject} {rest}"
    return text


def _life_event(m: re.Match[str]) -> str:
    # "at his death" -> "when he died"
    return f"when {_PRONOUN_OF[m.group('pron').lower()]} {_LIFE_EVENTS[m.group('event').lower()]}"


# In order; each applies to the result of the ones before it.
REWRITES: list[Rewrite] = [
    # a unit phrase inside the question or before it goes to its end, where the templates read it
    (
        re.compile(
            r"^(?P<head>.+?),\s*in (?P<unit>(?!what\b|which\b)[a-z][a-z ]*?),\s*(?P<rest>.+?)$", re.IGNORECASE
        ),
        _unit_to_end,
    ),
    (
        re.compile(r"^in (?P<unit>(?!what\b|which\b)[a-z][a-z ]*?),\s*(?P<rest>.+?)$", re.IGNORECASE),
        _leading_unit,
    ),
    # "what was the combined number of X in A and B" -> "how many X did A and B have in total"
    (
        re.compile(
            r"^what (?:is|was|were|are) the (?:combined|total|joint) number of (?P<what>.+?) (?:in|of|at|for) "
            r"(?P<a>.+?) and (?P<b>.+?)$",
            re.IGNORECASE,
        ),
        r"how many \g<what> did \g<a> and \g<b> have in total",
    ),
    # "what number of X", "what was the number of X" -> "how many X"
    (re.compile(r"\bwhat (?:(?:is|was|were|are) the )?(?:total )?number of\b", re.IGNORECASE), "how many"),
    # "what sum / amount did X raise" -> "how much did X raise"; "what part of X" -> "how much of X"
    (re.compile(rf"\bwhat (?:sum|amount)(?: of money)? (?={_COPULA}\b)", re.IGNORECASE), "how much "),
    (re.compile(r"\bwhat (?:is|was) the amount of\b", re.IGNORECASE), "how much was"),
    (re.compile(r"\bwhat (?:part|portion|amount) of\b", re.IGNORECASE), "how much of"),
    # "what did X contribute to Y, in pounds": a question that names its unit asks for an amount
    (re.compile(r"^what (?=(?:did|does|do) .+,\s*in [a-z ]+$)", re.IGNORECASE), "how much "),
    # "what did the ship cost" asks for an amount as well
    (re.compile(r"^what (?=(?:did|does|do) .+? (?:cost|fetch)\b)", re.IGNORECASE), "how much "),
    # imperatives: "Calculate the number of years between ..." -> "How many years between ..."
    (
        re.compile(
            r"^(?:please )?(?:calculate|compute|work out|find|give|state|determine|tell me) (?:the )?"
            r"(?=number of\b|how\b|what\b)",
            re.IGNORECASE,
        ),
        "",
    ),
    (re.compile(r"^number of\b", re.IGNORECASE), "how many"),
    # "how many N more did X ..." -> "how many more N did X ..."; "N more than Y did X V" likewise
    (
        re.compile(
            r"\bhow many (?P<what>[\w-]+(?: [\w-]+)?) (?P<cmp>more|fewer|less) than (?P<other>.+?) "
            r"(?P<aux>did|does|do|could|can|had|has|have|was|were) (?P<rest>.+)$",
            re.IGNORECASE,
        ),
        r"how many \g<cmp> \g<what> \g<aux> \g<rest> than \g<other>",
    ),
    (
        re.compile(
            r"\bhow many (?P<what>[\w-]+(?: [\w-]+)?) (?P<cmp>more|fewer|less)\b(?! than\b)", re.IGNORECASE
        ),
        r"how many \g<cmp> \g<what>",
    ),
    # "extra", "additional" and "compared with" in a comparison
    (re.compile(r"\bhow many (?:extra|additional)\b", re.IGNORECASE), "how many more"),
    (
        re.compile(r"(?<=\S) (?:compared (?:with|to)|in comparison (?:with|to)|as against)\b", re.IGNORECASE),
        " than",
    ),
    # "how much did X rise from A to B" -> "by how much did X rise from A to B"
    (
        re.compile(
            r"^how (?P<qty>much|many) did (?P<rest>.+? (?:rise|grow|increase|fall|drop|decline|decrease|shrink) "
            r"(?:from|between) )",
            re.IGNORECASE,
        ),
        r"by how \g<qty> did \g<rest>",
    ),
    # a year of birth or death; a life event told as a noun: "at his death" -> "when he died"
    (
        re.compile(r"\bwhat (?:was|is) (?P<who>.+?)(?:'s|’s) year of birth\b", re.IGNORECASE),
        r"in what year was \g<who> born",
    ),
    (
        re.compile(r"\bwhat (?:was|is) (?P<who>.+?)(?:'s|’s) year of death\b", re.IGNORECASE),
        r"in what year did \g<who> die",
    ),
    (
        re.compile(
            r"\bat (?:the time of )?(?P<pron>his|her|its|their) (?P<event>death|retirement|marriage)\b",
            re.IGNORECASE,
        ),
        _life_event,
    ),
    # common idioms for a plain verb
    (re.compile(r"\blost (?:his|her|their) li(?:fe|ves)\b", re.IGNORECASE), "died"),
    (re.compile(r"\bpassed away\b", re.IGNORECASE), "died"),
    (re.compile(r"\bfailed to\b", re.IGNORECASE), "did not"),
    (re.compile(r"\bcome to (?:an end|a close)\b", re.IGNORECASE), "end"),
    (re.compile(r"\bcame to (?:an end|a close)\b", re.IGNORECASE), "ended"),
    # "how many years did X live after Y" -> "how many years after Y did X die"
    (
        re.compile(r"^how many years did (?P<x>.+?) (?:live|survive) after (?P<y>.+)$", re.IGNORECASE),
        r"how many years after \g<y> did \g<x> die",
    ),
    # a book or a paper "came out" (not "came out on strike"): it was published
    (re.compile(r"\bcame out\b(?! on\b| against\b| in favour\b)", re.IGNORECASE), "was published"),
    # "by what amount did A exceed B" -> "by how much did A exceed B"
    (re.compile(r"\bby what (?:number|amount|margin|sum)\b", re.IGNORECASE), "by how much"),
    # "what proportion of X, as a percentage, ..." -> "what percentage of X ..."
    (
        re.compile(
            r"\bwhat (?:proportion|share|fraction) of\b(?=.*\b(?:per ?cent|percentage)\b)", re.IGNORECASE
        ),
        "what percentage of",
    ),
    (re.compile(r",?\s*(?:as|in) (?:a )?(?:percentage|per ?cent)\b,?", re.IGNORECASE), ""),
    # "what was X's age when Y", "how many years old was X when Y" -> "how old was X when Y"
    (
        re.compile(r"\bwhat (?:was|is|were) (?P<who>.+?)(?:'s|’s) age (?=when\b|at\b)", re.IGNORECASE),
        r"how old was \g<who> ",
    ),
    (re.compile(r"\bhow many years old\b", re.IGNORECASE), "how old"),
    # "what was the increase in X between A and B" -> "by how much did X increase between A and B"
    (
        re.compile(
            r"\bwhat (?:is|was) the (?P<change>increase|rise|growth|fall|drop|decline|decrease|change) in (?P<what>.+?) (?P<prep>between|from) ",
            re.IGNORECASE,
        ),
        lambda m: (
            f"by how much did {m.group('what')} {_VERB_OF[m.group('change').lower()]} {m.group('prep')} "
        ),
    ),
    # "at the time she married" -> "when she married" (not "at the time of the war")
    (re.compile(r"\bat the time (?:that |when )?(?!of\b)", re.IGNORECASE), "when "),
    # time spans asked with "how long"
    (re.compile(r"\bfor how long\b", re.IGNORECASE), "for how many years"),
    (
        re.compile(r"\bhow long (?:was it|passed|elapsed|went by) between\b", re.IGNORECASE),
        "how many years passed between",
    ),
    (re.compile(r"\bhow long (?=after\b|before\b)", re.IGNORECASE), "how many years "),
    # "how many years separate A and B", "how much time passed between A and B"
    (
        re.compile(r"\bhow many years (?:separated?|lie|lay) (?P<a>.+?) from (?P<b>.+)$", re.IGNORECASE),
        r"how many years passed between \g<a> and \g<b>",
    ),
    (
        re.compile(r"\bhow many years (?:separated?|lie|lay) (?!between\b)", re.IGNORECASE),
        "how many years passed between ",
    ),
    (
        re.compile(
            r"\bhow (?:much time|many years) (passed|elapsed|went by|separated|lay) between\b", re.IGNORECASE
        ),
        r"how many years \1 between",
    ),
    (
        re.compile(
            r"\bwhat (?:is|was) the (?:gap|interval|span of time|time span|length of time|time)(?: in years)? between\b",
            re.IGNORECASE,
        ),
        "how many years passed between",
    ),
    (
        re.compile(r"\bbetween the (?P<noun>[a-z]+) of (?P<a>.+?) and (?P<b>.+?)(?=[,?]|$)", re.IGNORECASE),
        _each_of,
    ),
    # "the difference between the number of X in A and in B" -> "how many more X did A have than B"
    (
        re.compile(
            r"\bwhat (?:is|was) the difference between the number of (?P<what>.+?) (?:in|of|at) (?P<a>.+?) "
            r"and (?:in|of|at) (?P<b>.+?)$",
            re.IGNORECASE,
        ),
        r"how many more \g<what> did \g<a> have than \g<b>",
    ),
    # "what is the difference in (the number of) X between A and B" -> "how many more X did A have than B"
    (
        re.compile(
            r"\bwhat (?:is|was) the difference in (?:the )?(?:number of )?(?P<what>[\w -]+?) between (?P<a>.+?) and (?P<b>.+?)(?=[,?]|$)",
            re.IGNORECASE,
        ),
        r"how many more \g<what> did \g<a> have than \g<b>",
    ),
]


def _years_not_length(question: str) -> str:
    """ "How long was X closed, in years?" -> "How many years was X closed?": a "how long" that
    asks for a time (a unit of years, or a past state with a predicate after its subject)."""
    m = re.search(
        rf"\bhow long (?P<verb>{_COPULA}) (?P<rest>.+?)(?P<unit>,\s*in (?P<name>[a-z ]+))?\??$",
        question,
        re.IGNORECASE,
    )
    if m is None:
        return question
    unit = (m.group("name") or "").strip().lower()
    if unit and unit not in {"years", "year"}:
        return question  # "how long is the quay, in feet": a length
    if not unit:
        if re.search(_LENGTH_UNITS, question, re.IGNORECASE) or m.group("verb").lower() in {"is", "are"}:
            return question
        if m.group("verb").lower() in {"was", "were"} and split_subject(m.group("rest")) is None:
            return question  # "how long was the jetty": no predicate, a length
    if (
        m.group("verb").lower() in {"do", "does", "did", "has", "have", "had"}
        and not unit
        and not _TIME_WORDS.search(question)
    ):
        return question  # "how long did X run": the templates read it as asked
    head = question[: m.start()]
    return f"{head}how many years {m.group('verb')} {m.group('rest')}?"


def rephrase(question: str) -> str:
    """``question`` in the wording the templates read (the question itself when no form
    applies)."""
    text = " ".join(question.split()).rstrip("?.").strip()
    for contraction, full in _CONTRACTIONS:
        text = contraction.sub(full, text)
    for move in (_fronted, _clause_then_later, _subject_first, _by_how_much_comparative, _asked_in_place):
        text = move(text)
    # "After the flood, the school stayed shut for how many years?": the statement after the
    # phrase is asked in place; then the phrase moves as before any question
    front = re.match(r"^(?P<front>[^,;?]+),\s*(?P<rest>.+)$", text)
    if front and not re.match(_WH, front.group("rest"), re.IGNORECASE):
        asked = _asked_in_place(front.group("rest"))
        if asked != front.group("rest"):
            text = _fronted(f"{front.group('front')}, {asked}")
    for pattern, replacement in REWRITES:
        text = pattern.sub(replacement, text)
    text = _years_not_length(text).rstrip("?").strip()
    if re.search(r"\bhow many years\b", text, re.IGNORECASE):
        text = re.sub(r",\s*in years$", "", text, flags=re.IGNORECASE)
    if text and text[0].islower():
        text = text[0].upper() + text[1:]
    return f"{text}?"


def forms(question: str) -> list[str]:
    """The question as asked, then its rewording where that differs."""
    again = rephrase(question)
    asked = " ".join(question.split())
    return [asked] if again.rstrip("?") == asked.rstrip("?") else [asked, again]
