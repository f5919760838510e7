"""``reason``: the short final answer, tagged ``final_answer``.

The model reads all the facts at once; its reading competes with what ``extract`` read off each
fact alone. An answer counts only if it is *valid*: its words occur in the facts (read, not
invented) and it is not just a piece of the question. Among valid answers, the one found in the
best-ranked fact wins, then agreement between readers, then the whole-context reading.
"""

from __future__ import annotations

from ..frames import FINAL_ANSWER_TAG, FinalAnswer, PacketType, TriplesPacket
from ..prompts import answer_prompt, clean_answer
from ..scoring import normalize
from .answer_type import anchored, expected_type, matches, spans, valid
from .registry import Tool, ToolContext, register
from .text import terms


def support_rank(answer: str, facts: list[str]) -> int:
    """Index of the best-ranked fact that contains the answer's words (len(facts) if none)."""
    words = set(terms(answer))
    for i, fact in enumerate(facts):
        if words and words <= set(terms(fact)):
            return i
    return len(facts)


def choose(question: str, facts: list[str], reading: str, candidates: list[str]) -> tuple[str, str]:
    """Pick the final answer from the whole-context reading and the per-fact candidates.

    Readers' answers come first; the typed spans of the facts (the years for a "which year"
    question, the names for "who") stand in when no reader gave a supported answer of that type.
    """
    atype = expected_type(question)
    # The best fact read alone beats the whole context: a small model is easily distracted.
    options = [(reading, "reading", 1.0)] + [
        (c, f"candidate{i}", 2.0 if i == 0 else 0.5 / i) for i, c in enumerate(candidates)
    ]
    votes: dict[str, int] = {}
    for text, _, _ in options:
        votes[normalize(text)] = votes.get(normalize(text), 0) + 1
    seen = {normalize(text) for text, _, _ in options}
    named = {normalize(a) for fact in facts for a in anchored(fact, atype, question)}
    for i, fact in enumerate(facts):
        for span in spans(fact, atype, question):
            if normalize(span) not in seen:
                seen.add(normalize(span))
                options.append((span, f"span{i}", 0.0))

    def score(option: tuple[str, str, float]) -> float:
        text, _, prior = option
        support = 3.0 / (1 + support_rank(text, facts))  # facts come best-ranked first
        return (
            10.0 * valid(text, facts, question)
            + 6.0 * matches(text, atype)
            + 5.0 * (normalize(text) in named)
            + support
            + votes.get(normalize(text), 0)  # readers agreeing; they read overlapping facts
            + prior
        )

    best = max(options, key=score)
    return best[0], best[1]


async def run(ctx: ToolContext, packet: TriplesPacket) -> FinalAnswer:
    # A two-fact question arrives with its bridge filled in by `extract` (see hops.py).
    body = packet.payload
    question = body.resolved_question or packet.question
    facts = [f.text for f in body.facts]
    candidates = [f.candidate for f in body.facts if f.candidate is not None]
    if not facts:
        raise ValueError("triples packet carries no facts")
    reading = clean_answer(await ctx.llm.complete(answer_prompt(" ".join(facts), question), ctx.usage))
    answer, method = choose(question, facts, reading, candidates)
    ctx.memory["answer"] = answer
    return FinalAnswer(
        answer=answer,
        method=method,
        question=question,
        reading=reading,
        candidates=candidates,
        facts_used=len(facts),
        triples_seen=len(body.triples),
    )


TOOL = register(
    Tool(
        "reason",
        PacketType.TRIPLES,
        PacketType.DATA_EVENT,
        run,
        tag=FINAL_ANSWER_TAG,
        description="final short answer",
    )
)
