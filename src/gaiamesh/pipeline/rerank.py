"""Query-likelihood reranking: how likely the model finds the question after reading a text.

BM25 only sees shared words, so a question that paraphrases its sentence ("who started the
group" for "its founder was ...") ranks it low. A language model that reads the sentence and
then the question gives the question a higher likelihood when the sentence is about what it
asks, whatever the words. Scoring every text is costly, so only BM25's best ``depth`` are
read, and the two orders are fused (reciprocal-rank fusion), neither alone deciding.
"""

from __future__ import annotations

from ..tools.tool import ToolContext

DEPTH = 10  # texts the model reads per ranking
_FUSION_K = 5  # reciprocal-rank fusion constant: small lists, so the top ranks weigh most


def ql_prompt(text: str) -> str:
    """The prompt whose continuation is the question: the text, then a question about it."""
    return f"Context: {' '.join(text.split())}\nQuestion:"


async def rerank(
    ctx: ToolContext, question: str, texts: list[str], ranked: list[tuple[int, float]], depth: int = DEPTH
) -> list[tuple[int, float]]:
    """``ranked`` (BM25's ``(index, score)`` list, best first) with its first ``depth`` entries
    reordered by fusing BM25's order with the model's likelihood of ``question`` after each
    text; the rest follow unchanged. Unchanged when the model server cannot score, or when
    ``ANSWER_CHOICE=weights`` asks for no likelihoods."""
    head, tail = ranked[:depth], ranked[depth:]
    if len(head) < 2 or (ctx.settings is not None and ctx.settings.answer_choice == "weights"):
        return ranked  # ANSWER_CHOICE=weights: no likelihood anywhere (a backend that scores slowly)
    likelihood: dict[int, float] = {}
    for i, _ in head:
        got = await ctx.llm.score(ql_prompt(texts[i]), [f" {question.strip()}"], ctx.usage)
        if got is None:
            return ranked
        likelihood[i] = got[0]
    by_model = sorted(likelihood, key=lambda i: -likelihood[i])
    fused = {
        i: 1.0 / (_FUSION_K + r) + 1.0 / (_FUSION_K + by_model.index(i)) for r, (i, _) in enumerate(head)
    }
    ctx.memory.setdefault("query_likelihood", []).append({str(i): round(v, 3) for i, v in likelihood.items()})
    return sorted(((i, round(v, 4)) for i, v in fused.items()), key=lambda p: -p[1]) + tail
