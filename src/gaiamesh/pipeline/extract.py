"""``extract``: candidate facts, the retrieved sentences that bear on the question, each with
the model's reading of what it says about the question.

A two-fact question (see ``hops.py``) is asked in two steps: first the inner question, whose
answer (the bridge) is read off its best sentence, then the question about the bridge, which
picks the facts that travel on.
"""

from __future__ import annotations

import re

from ..errors import ToolError
from ..mesh.frames import PacketType, SearchDocsPacket
from ..mesh.payloads import Events, Fact, Hop
from ..tools.tool import Tool, ToolContext
from .answer_type import AnswerType, matches, prefer, spans, typed_rank, valid
from .heuristics import CLAUSE, POINTS_BACK, asks_who, without_the
from .hops import Decomposition, about
from .read import read_answer
from .rerank import rerank
from .split import as_decomposition, split_question
from .text import sentences, terms

TOP_FACTS = 3
READ_FACTS = 2  # facts the model reads one by one (each is one short call)


async def find_bridge(ctx: ToolContext, hop: Decomposition, pool: list[str]) -> Hop | None:
    """Answer the inner question: the model reads its best sentence; a name in that sentence
    stands in when the reading is not a name found there. None when the sentence has no name."""
    best = typed_rank(hop.inner, pool, AnswerType.PERSON)[0][0]
    fact = pool[best]
    reading = await read_answer(ctx, fact, hop.inner)
    reading = without_the(reading)
    if matches(reading, AnswerType.PERSON) and valid(reading, [fact], hop.inner):
        return Hop(question=hop.inner, fact=fact, answer=reading, method="reading")
    asked = set(terms(hop.inner))
    if (
        not asks_who(hop.inner) and len(reading.split()) <= 5 and valid(reading, [fact], hop.inner)
        and not asked & set(terms(reading))  # the answer to "which X did Y" does not repeat Y
    ):  # fmt: skip
        # "Which building holds the archive?" may be answered by a description ("old
        # granary"); only people are asked for by name.
        return Hop(question=hop.inner, fact=fact, answer=reading, method="reading")
    names = spans(fact, AnswerType.PERSON, hop.inner)
    if not names:
        return None
    return Hop(question=hop.inner, fact=fact, answer=nearest(fact, names, hop.inner), method="span")


def nearest(sentence: str, names: list[str], question: str) -> str:
    """The name closest to the question's words in ``sentence``, names before them counting
    nearer (the doer comes first: "X, who became its first captain"; "X took command")."""
    # First the clause that says most of what the question asks ("The Solveig took the party to
    # the island, while the Kestrel carried out a survey": the first, for who took the party).
    clauses = [c for c in CLAUSE.split(sentence) if any(n in c for n in names)] or [sentence]
    asked = set(terms(question))
    sentence = max(clauses, key=lambda c: len(asked & set(terms(c))))
    names = [n for n in names if n in sentence] or names
    words = sentence.split()
    stems = [set(terms(w)) for w in words]
    subject = {t for w in re.findall(r"\b[A-Z][\w'-]*", question) for t in terms(w)}
    wanted = asked - subject  # the question's names name its subject, not the answer
    anchors = [i for i, s in enumerate(stems) if s & wanted]

    def distance(name: str) -> int:
        first = set(terms(name.split()[0]))
        at = [i for i, s in enumerate(stems) if first and first <= s]
        return min((a - i if i <= a else 2 * (i - a) for i in at for a in anchors), default=len(words))

    return min(names, key=distance)


async def run(ctx: ToolContext, packet: SearchDocsPacket) -> Events:
    seen: dict[str, None] = {}
    for passage in packet.payload.passages:
        previous = ""
        for sent in sentences(passage.text):
            seen.setdefault(sent, None)
            if previous and POINTS_BACK.match(sent):
                # "It was designed by Ann Lee" says what "it" is only with the sentence
                # before: the pair is a fact of its own.
                seen.setdefault(f"{previous} {sent}", None)
            previous = sent
    pool = list(seen)
    if not pool:
        raise ToolError("search_docs carries no passages")
    question, bridge, hops = packet.question, "", None
    # the split search retrieved for; its own where search was left out
    split = packet.payload.split or await split_question(ctx, packet.question)
    hop = as_decomposition(split)
    if hop is not None:
        found = await find_bridge(ctx, hop, pool)
        if found is not None:
            bridge = found.answer
            question = hop.resolve(bridge)
            hops = [found]
            ctx.memory["hops"] = [found.model_dump()]
    ranked = typed_rank(question, pool, bridge=bridge)
    ranked = prefer(question, pool, await rerank(ctx, question, pool, ranked), bridge=bridge)
    facts: list[Fact] = []
    for i, score in ranked:
        if len(facts) == TOP_FACTS:
            break
        if any(pool[i] in f.text or f.text in pool[i] for f in facts):
            continue  # a sentence and its pair with the one before say the same: one of them
        candidate = None
        if len(facts) < READ_FACTS:
            context = about(pool[i], bridge) if bridge else pool[i]
            candidate = await read_answer(ctx, context, question)
        facts.append(Fact(text=pool[i], score=round(score, 4), candidate=candidate))
    ctx.memory["facts"] = [f.text for f in facts]
    return Events(facts=facts, resolved_question=question if hops else None, hops=hops)


def passthrough(packet: SearchDocsPacket) -> Events:
    """Ablated: the passages themselves as the facts."""
    return Events(facts=[Fact(text=p.text, score=p.score) for p in packet.payload.passages])


TOOL = Tool(
    "extract", PacketType.SEARCH_DOCS, PacketType.EVENTS, run, description="question-relevant facts",
    passthrough=passthrough,
    uses_schemas=lambda _s: "phrases",  # typed answers (and a split, where search was left out)
    scores=True,  # query-likelihood reranking of sentences
)
