"""``reason``: the short final answer, tagged ``final_answer``.

The model reads all the facts at once; its reading competes with what ``extract`` read off each
fact alone, with the typed spans of the facts (the years for "which year", the names for "who")
and with the arguments of ``triple``'s triples (spans whose edges the model drew). An answer
counts only if it is *valid*: its words occur in the facts (read, not invented), it is not just
a piece of the question, and it has the form the question asks for.

Among the valid answers the model decides by likelihood: each is scored as the continuation of
the same answer prompt (the model server's ``/api/score``), so a 270M model that cannot be
trusted to *write* the right span still ranks the right one first. Where the server cannot
score (an official Ollama), hand-set weights stand in: the best-ranked fact first, then
agreement between readers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import ToolError
from ..mesh.frames import FINAL_ANSWER_TAG, PacketType, TriplesPacket
from ..mesh.payloads import FinalAnswer, Triple
from ..models.prompts import answer_prompt
from ..tasks.answers import normalize
from ..tools.tool import Tool, ToolContext
from .answer_type import AnswerType, anchored, expected_type, matches, spans, valid
from .heuristics import DETERMINER
from .hops import about_bridge
from .read import read_answer
from .text import paraphrases, terms

# Proper names in a question, not its first word (the wh-word or an opening capital).
_NAMES = re.compile(r"(?<!^)\b[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*")
_EVIDENCE = 0.7  # log-likelihood units: about twice as likely
_RANKED = 0.75  # the best-ranked fact's share; the second gets half of it
_AGREE = 1.0  # per agreeing reading of a single fact
# Per tie of an option's own clause to the question (its subject, what it asks). Larger than the
# likelihood gaps a 270M model leaves between a right name and a wrong one in the same facts
# (2 to 4 nats), smaller than those between an answer and a stray span of the right form.
_TIE = 4.5
# Where a sentence's clauses and phrases part: "; ", ", " (not the comma inside "1,850"), brackets.
_PARTS = re.compile(r"\s*[;:()]\s*|,\s+")


@dataclass(frozen=True)
class Option:
    """A candidate final answer and where it came from (``reading``, ``candidate0``, ``span1``, ``triple``)."""

    text: str
    source: str
    prior: float = 0.0


def support_rank(answer: str, facts: list[str]) -> int:
    """Index of the best-ranked fact that contains the answer's words (len(facts) if none)."""
    words = set(terms(answer))
    for i, fact in enumerate(facts):
        if words and words <= set(terms(fact)):
            return i
    return len(facts)


def options(
    question: str, facts: list[str], reading: str, candidates: list[str], triples: Sequence[Triple] = ()
) -> list[Option]:
    """Every candidate answer once: the readings first, then typed spans of the facts, the
    names inside a reading that is a description ("the engineer Ann Lee"), and the arguments
    of triples whose facts are among ``facts``."""
    atype = expected_type(question)
    out = [Option(reading, "reading", 1.0)] + [
        Option(c, f"candidate{i}", 2.0 if i == 0 else 0.5 / i) for i, c in enumerate(candidates)
    ]
    seen = {normalize(o.text) for o in out}

    def add(text: str, source: str) -> None:
        text = text.strip(" ,;.")
        if text and normalize(text) not in seen:
            seen.add(normalize(text))
            out.append(Option(text, source))

    for i, fact in enumerate(facts):
        for span in spans(fact, atype, question):
            add(span, f"span{i}")
    if atype in (AnswerType.PERSON, AnswerType.PLACE):
        for o in list(out):
            if not matches(o.text, atype):
                for span in spans(o.text, atype, question):
                    add(span, o.source)
    for t in triples:
        for arg in (t.subject, t.object):
            add(DETERMINER.sub("", arg), "triple")
    return out


def eligible(question: str, facts: list[str], opts: list[Option]) -> list[Option]:
    """The options that could be the answer: valid, and of the asked-for form."""
    atype = expected_type(question)
    fit: dict[str, Option] = {}
    for o in opts:  # once each: readers often agree
        if valid(o.text, facts, question) and matches(o.text, atype):
            fit.setdefault(normalize(o.text), o)
    return list(fit.values())


def choose(
    question: str, facts: list[str], reading: str, candidates: list[str], triples: Sequence[Triple] = ()
) -> tuple[str, str]:
    """Pick the final answer with hand-set weights (used where the model cannot score)."""
    atype = expected_type(question)
    opts = options(question, facts, reading, candidates, triples)
    votes: dict[str, int] = {}
    for o in opts[: 1 + len(candidates)]:
        votes[normalize(o.text)] = votes.get(normalize(o.text), 0) + 1
    named = {normalize(a) for fact in facts for a in anchored(fact, atype, question)}

    def score(o: Option) -> float:
        support = 3.0 / (1 + support_rank(o.text, facts))  # facts come best-ranked first
        return (
            10.0 * valid(o.text, facts, question)
            + 6.0 * matches(o.text, atype)
            + 5.0 * (normalize(o.text) in named)
            + support
            + votes.get(normalize(o.text), 0)  # readers agreeing; they read overlapping facts
            + o.prior
        )

    best = max(opts, key=score)
    return best.text, best.source


def related(option: str, question: str, triples: Sequence[Triple]) -> bool:
    """Whether a triple ties ``option`` to what the question is about: the option is one of its
    arguments and the other argument names the question's subject (its proper names, such as
    a two-fact question's bridge), e.g. (Lee | was born in | Tarnby) for "Where was Ann
    Lee born?". A name elsewhere in the same sentence is not tied to the subject this way."""
    subject = {t for name in _NAMES.findall(question) for t in terms(name)}
    words = set(terms(option))
    if not subject or not words:
        return False
    for t in triples:
        for arg, other in ((t.subject, t.object), (t.object, t.subject)):
            if words <= set(terms(arg)) and set(terms(other)) & subject and not words & subject:
                return True
    return False


def _windows(option: str, fact: str) -> list[str]:
    """The parts of ``fact`` that speak of ``option``: the clause or phrase it stands in, with
    the part before where it is that part's appositive ("run by her cousin, Ann Lee,")
    and the part after where that describes it ("Tarnby, the town where she was born")."""
    parts = _PARTS.split(fact)
    out: list[str] = []
    for i, part in enumerate(parts):
        if option not in part:
            continue
        window = part
        if part.strip(" .") == option and i > 0:
            window = f"{parts[i - 1]} {window}"
        if part.rstrip(" .").endswith(option) and i + 1 < len(parts) and DETERMINER.match(parts[i + 1]):
            window = f"{window} {parts[i + 1]}"
        out.append(window)
    return out


def subject_terms(question: str) -> set[str]:
    """The terms of what a question is about: its proper names."""
    return {t for name in _NAMES.findall(question) for t in terms(name)}


def ties(option: str, question: str, facts: list[str]) -> int:
    """How closely the facts tie ``option`` to the question, at the best of its mentions: one
    where the part of a fact it stands in also names the question's subject, one where that
    part says what the question asks (another of its words, or a paraphrase: "established"
    for "founded"). A name elsewhere in the sentence, about something else, gets neither."""
    subject = subject_terms(question)
    asked = [t for t in terms(question) if t not in subject]
    asked_set = set(asked) | set(paraphrases(asked))
    own = set(terms(option))
    best = 0
    for fact in facts:
        for window in _windows(option, fact):
            said = set(terms(window)) - own
            best = max(best, bool(said & (subject - own)) + bool(said & asked_set))
    return best


def by_likelihood(
    opts: list[Option], scores: list[float], question: str, facts: list[str], triples: Sequence[Triple] = (),
    readings: Sequence[str] = (),
) -> Option:  # fmt: skip
    """The likeliest option, with the evidence the model's likelihood does not see: each tie of
    its own clause to the question (``ties``, its own or a shorter form's) outweighs the usual
    gap between a right and a wrong name, a triple tying it to the question's subject counts as
    much as being twice as likely, each of ``extract``'s readings of a single fact that agrees
    (the model undistracted by the other facts) about as much as being e times as likely, and a
    better-ranked fact (retrieval's own judgement) a little."""
    agree = [normalize(r) for r in readings]
    own = {o.text: ties(o.text, question, facts) for o in opts}
    words = {text: set(terms(text)) for text in own}
    # A shorter form of an option names the same thing ("Roe", "Abel Roe"): the fuller
    # option is tied wherever the shorter one is.
    tie = {t: max([v, *(own[s] for s in own if words[s] and words[s] <= words[t])]) for t, v in own.items()}

    def score(pair: tuple[Option, float]) -> float:
        o, ll = pair
        support = _RANKED / (1 + support_rank(o.text, facts))  # facts come best-ranked first
        votes = _AGREE * agree.count(normalize(o.text))
        tied = _TIE * tie[o.text]
        return ll + tied + _EVIDENCE * related(o.text, question, triples) + support + votes

    return max(zip(opts, scores, strict=True), key=score)[0]


def complete_dates(question: str, opts: list[Option], scores: list[float]) -> tuple[list[Option], list[float]]:
    """For "when", a bare year inside a date that is also an option gives way to the date, which
    takes the year's likelihood if higher: "4 May 1901" answers "when" more fully than
    "1901", and the model's belief in 1901 is belief in that date."""
    if expected_type(question) is not AnswerType.WHEN:
        return opts, scores
    year = re.compile(r"\d{4}")
    best = dict(zip((o.text for o in opts), scores, strict=True))
    kept: list[tuple[Option, float]] = []
    for o in opts:
        if year.fullmatch(o.text.strip()) and any(o.text in d.text and d.text != o.text for d in opts):
            continue
        inside = [best[y.text] for y in opts if year.fullmatch(y.text.strip()) and y.text in o.text and y.text != o.text]
        kept.append((o, max([best[o.text], *inside])))
    return [o for o, _ in kept], [v for _, v in kept]


async def run(ctx: ToolContext, packet: TriplesPacket) -> FinalAnswer:
    # A two-fact question arrives with its bridge filled in by `extract` (see hops.py).
    body = packet.payload
    question = body.resolved_question or packet.question
    facts = [f.text for f in body.facts]
    candidates = [f.candidate for f in body.facts if f.candidate is not None]
    if not facts:
        raise ToolError("triples packet carries no facts")
    if body.hops:
        # The outer question is about the bridge: what the facts say about it is the context
        # (a date in the same sentence about a rival firm is not an answer).
        facts = about_bridge(facts, body.hops[-1].answer)
    reading = await read_answer(ctx, " ".join(facts), question)
    prompt = answer_prompt(" ".join(facts), question)  # the text form the likelihood is read from
    opts = options(question, facts, reading, candidates, body.triples)
    fit = eligible(question, facts, opts)
    weigh = len(fit) > 1 and (ctx.settings is None or ctx.settings.answer_choice != "weights")
    scores = await ctx.llm.score(prompt, [f" {o.text}\n" for o in fit], ctx.usage) if weigh else None
    if scores is not None:
        ctx.memory["likelihoods"] = {o.text: round(v, 3) for o, v in zip(fit, scores, strict=True)}
        fit, scores = complete_dates(question, fit, scores)
        best = by_likelihood(fit, scores, question, facts, body.triples, candidates)
        answer, method = best.text, f"likelihood:{best.source}"
    else:
        answer, method = choose(question, facts, reading, candidates, body.triples)
    ctx.memory["answer"] = answer
    return FinalAnswer(
        answer=answer,
        method=method,
        question=question,
        reading=reading,
        candidates=candidates,
        facts_used=len(facts),
        triples_seen=len(body.triples),
        # the reading is the model's; the choice is too, unless hand-set weights made it
        made_by={"reading": "model", "answer": "model" if scores is not None else "tool"},
    )


TOOL = Tool(
    "reason",
    PacketType.TRIPLES,
    PacketType.DATA_EVENT,
    run,
    tag=FINAL_ANSWER_TAG,
    description="final short answer",
    uses_schemas=lambda _s: "phrases",  # typed answers
    scores=True,  # the answer among candidates by likelihood
)
