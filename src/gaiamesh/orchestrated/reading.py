"""``find_fact`` as an LLM team reads a document: retrieval finds the sentences, their spans of
the asked-for kind are the candidates, and the model chooses among them.

Nothing here reads a particular phrasing. The sentences come from BM25 with the typed
preference the pipeline uses (a sentence without a year cannot answer "which year"); the
candidates are typed spans (numbers with their units, years, dates, names); and the choice is
the model's likelihood of each candidate as the answer to the step's question, asked over the
best sentences, as ``reason`` chooses. Where the backend cannot score, the model picks one of
the candidates under a schema (a typed answer); where it cannot do that either, its free
reading is matched against them. Retrieval's order, the step's unit and the query's words
near the span (term proximity, as search engines weigh it) add evidence the likelihood of a
270M model does not see sharply.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..models.prompts import answer_prompt
from ..pipeline.answer_type import AnswerType, spans, typed_rank
from ..pipeline.read import read_answer
from ..pipeline.text import sentences, terms
from ..tasks.answers import normalize
from ..tools.tool import ToolContext
from .calculator import to_number
from .plan_tools import FindFact

TOP_SENTENCES = 3  # sentences the model reads for one fact
RANK_PRIOR = 0.75  # log-likelihood units for the best-ranked sentence's spans; halved per rank
UNIT_PRIOR = 1.5  # for a span that counts what the step says it counts ("612,000 passengers")
NEAR_WORDS = 10  # the window around a span in which the query's words count as near it
NEAR_PRIOR = 3.0  # for all of the query's words near the span; in proportion for some
# The step's question, by the kind of answer it wants: the query says what, the type how.
ASKED = {
    AnswerType.YEAR: "In what year: {}?",
    AnswerType.DATE: "On what date: {}?",
    AnswerType.WHEN: "When: {}?",
    AnswerType.NUMBER: "How many or how much: {}?",
    AnswerType.PERSON: "Who: {}?",
    AnswerType.PLACE: "Where: {}?",
    AnswerType.ANY: "{}?",
}


@dataclass(frozen=True)
class Candidate:
    span: str
    rank: int  # its sentence's place in retrieval's order
    sentence: str


def step_question(task: FindFact) -> str:
    """The question the model answers for this step."""
    return task.question or ASKED[AnswerType(task.answer_type)].format(task.query.strip().rstrip("?"))


def _excluded(span: str, value: Any, exclude: list[str | int | float]) -> bool:
    """Whether another step already found this value (a second fact must be a different one)."""
    for other in exclude:
        if isinstance(other, int | float) and not isinstance(other, bool):
            if value is not None and float(value) == float(other):
                return True
        elif normalize(span) == normalize(str(other)) or (value is not None and to_number(str(other)) == value):
            return True
    return False


def candidates(task: FindFact, sents: list[str], ranked: list[int]) -> list[Candidate]:
    """The typed spans of the ranked sentences, once each, best-ranked first; never a value an
    earlier step found, nor a number the query itself states ("of the 40 crew")."""
    atype = AnswerType(task.answer_type)
    numeric = atype in (AnswerType.YEAR, AnswerType.NUMBER)
    stated = set(re.findall(r"\d+(?:[.,]\d+)*", task.query))
    out: dict[str, Candidate] = {}
    for rank, i in enumerate(ranked):
        for span in spans(sents[i], atype, task.query):
            value = to_number(span) if numeric else None
            if _excluded(span, value, task.exclude) or (numeric and span.split()[0] in stated):
                continue
            out.setdefault(normalize(span), Candidate(span, rank, sents[i]))
    return list(out.values())


def nearness(c: Candidate, query: str) -> float:
    """The share of the query's words found within ``NEAR_WORDS`` words of the span."""
    wanted = set(terms(query))
    if not wanted:
        return 0.0
    words = c.sentence.split()
    first = c.span.split()[0]
    at = [i for i, w in enumerate(words) if w.startswith(first)] or [len(words) // 2]
    best = 0
    for i in at:
        window = words[max(0, i - NEAR_WORDS) : i + len(c.span.split()) + NEAR_WORDS]
        best = max(best, len(wanted & set(terms(" ".join(window)))))
    return best / len(wanted)


def counts_unit(c: Candidate, unit: str) -> bool:
    """Whether the span, or the word right after it, names the unit the step counts."""
    if not unit:
        return False
    at = c.sentence.find(c.span)
    after = c.sentence[at + len(c.span) :].split()[:1] if at >= 0 else []
    return bool(set(terms(unit)) & set(terms(" ".join([*c.span.split()[1:], *after]))))


def evidence(c: Candidate, task: FindFact) -> float:
    """What retrieval and the query say for ``c``, in log-likelihood units: its sentence's rank,
    its unit, and the query's words near it."""
    return RANK_PRIOR / (1 + c.rank) + UNIT_PRIOR * counts_unit(c, task.unit) + NEAR_PRIOR * nearness(c, task.query)


async def choose(ctx: ToolContext, context: str, task: FindFact, cands: list[Candidate]) -> Candidate:
    """The model's choice among ``cands`` as the answer to the step's question over ``context``
    (with one candidate too: the model reads every fact a step finds, so that its cost is
    counted). Without scores, its own reading where it names a candidate; else the evidence."""
    weights = ctx.settings is not None and ctx.settings.answer_choice == "weights"
    question = step_question(task)
    prompt = answer_prompt(context, question)
    scores = None if weights else await ctx.llm.score(prompt, [f" {c.span}\n" for c in cands], ctx.usage)
    if scores is None:
        reading = normalize(await read_answer(ctx, context, question))
        named = [c for c in cands if normalize(c.span) == reading]
        return named[0] if named else max(cands, key=lambda c: evidence(c, task))
    ctx.memory.setdefault("likelihoods", []).append({c.span: round(v, 3) for c, v in zip(cands, scores, strict=True)})
    return max(zip(cands, scores, strict=True), key=lambda pair: pair[1] + evidence(pair[0], task))[0]


SUMMARY_POOL = 2  # sentences retrieval offers the model per sentence of the summary (plus two)


async def choose_sentences(ctx: ToolContext, topic: str, pool: list[str], n: int) -> list[int]:
    """The ``n`` sentences of ``pool`` (retrieval's order) the model chooses for a summary about
    ``topic``: each sentence's log-likelihood per word as a sentence of that summary, after
    the pool itself, plus its rank in retrieval; without scores, retrieval's first ``n``."""
    prompt = f"Text: {' '.join(pool)}\nThe sentence of the text that says most about {topic}:"
    weights = ctx.settings is not None and ctx.settings.answer_choice == "weights"
    scores = None if weights else await ctx.llm.score(prompt, [f" {s}\n" for s in pool], ctx.usage)
    if scores is None:
        return list(range(min(n, len(pool))))
    weight = [v / max(1, len(s.split())) + RANK_PRIOR / (1 + r) for r, (s, v) in enumerate(zip(pool, scores, strict=True))]
    return sorted(range(len(pool)), key=lambda r: -weight[r])[:n]


def document_sentences(ctx: ToolContext) -> list[str]:
    if ctx.doc is None:
        raise LookupError("this worker has not received the run's document (doc_init)")
    return sentences("".join(ctx.doc.chunks))


async def find_fact(ctx: ToolContext, task: FindFact) -> tuple[Any, Any, str | None]:
    """``(span, its value, the sentence it came from)``: the model's choice among the typed
    spans of the sentences retrieval ranks best for the query."""
    sents = document_sentences(ctx)
    atype = AnswerType(task.answer_type)
    ranked = [i for i, score in typed_rank(task.query, sents, atype) if score > 0]
    if not ranked:
        raise LookupError(f"the document says nothing of {task.query!r}")
    if atype is AnswerType.ANY:
        return sents[ranked[0]], None, sents[ranked[0]]
    cands = candidates(task, sents, ranked[:TOP_SENTENCES])
    if not cands:
        raise LookupError(f"no {atype.value} for {task.query!r} in the document")
    context = " ".join(sents[i] for i in sorted(ranked[:TOP_SENTENCES]))  # in the document's order
    chosen = await choose(ctx, context, task, cands)
    numeric = atype in (AnswerType.YEAR, AnswerType.NUMBER)
    return chosen.span, to_number(chosen.span) if numeric else None, chosen.sentence
