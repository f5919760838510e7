"""``search``: retrieval over the document's doc_init chunks: BM25, the best of them reranked by
the model's likelihood of the question (``rerank.py``), typed chunks first."""

from __future__ import annotations

from ..errors import ToolError
from ..mesh.frames import DocInitPacket, PacketType, chunk_document
from ..mesh.payloads import Passage, SearchDocs
from ..tools.tool import Tool, ToolContext
from .answer_type import prefer, typed_rank
from .followup import resolve
from .rerank import rerank
from .split import as_decomposition, split_question

TOP_K = 3
_REACH = 240  # how far a passage may grow to reach whole sentences across chunk edges


def _expand(doc: str, start: int, end: int) -> str:
    """Grow ``doc[start:end]`` to sentence boundaries, so facts cut by the 400-char split survive."""
    lo = max(0, start - _REACH)
    cut = max(doc.rfind(". ", lo, start), doc.rfind("\n", lo, start))
    s = cut + 1 if cut >= 0 else (0 if start - lo < _REACH else start)
    hi = min(len(doc), end + _REACH)
    nxt = [i for i in (doc.find(". ", end, hi), doc.find("\n", end, hi)) if i >= 0]
    e = min(nxt) + 1 if nxt else (len(doc) if hi == len(doc) else end)
    # Spaces are evened out, line breaks kept: they separate headings and paragraphs.
    return "\n".join(" ".join(line.split()) for line in doc[s:e].splitlines() if line.strip())


async def run(ctx: ToolContext, packet: DocInitPacket) -> SearchDocs:
    chunks = packet.payload.chunks
    if not chunks:
        raise ToolError("doc_init carries no chunks")
    doc = "".join(chunks)
    offsets = [sum(len(c) for c in chunks[:i]) for i in range(len(chunks))]
    # A follow-up in a conversation is asked about what it points back at; the resolved
    # question is what every later stage works on.
    question = resolve(packet.question, packet.payload.history or [])
    if question != packet.question:
        ctx.question = question
        ctx.memory["followup"] = {"asked": packet.question, "resolved": question}
    split = await split_question(ctx, question)
    hop = as_decomposition(split)
    if hop is None:
        # The model reads each candidate grown to whole sentences: a fact cut by the split
        # ("The new wing ... | was opened in May 1901") is only recognisable whole.
        grown = [_expand(doc, offsets[i], offsets[i] + len(c)) for i, c in enumerate(chunks)]
        ranked = prefer(question, chunks, await rerank(ctx, question, grown, typed_rank(question, chunks)))[:TOP_K]
    else:
        # A two-fact question: the best chunks for the inner question and for the rest of the
        # question (about the bridge, not yet known) take turns, so both facts are retrieved.
        ranked, taken = [], set()
        for pair in zip(typed_rank(hop.inner, chunks), typed_rank(hop.remainder, chunks), strict=True):
            for r in pair:
                if r[0] not in taken:
                    taken.add(r[0])
                    ranked.append(r)
        ranked = ranked[: TOP_K + 1]
    passages = [
        Passage(chunk=i, score=round(score, 4), text=_expand(doc, offsets[i], offsets[i] + len(chunks[i])))
        for i, score in ranked
    ]
    ctx.memory["retrieved_chunks"] = [p.chunk for p in passages]
    return SearchDocs(passages=passages, n_chunks=len(chunks), split=split)


def passthrough(packet: DocInitPacket) -> SearchDocs:
    """Ablated: every chunk, in document order, unranked."""
    chunks = packet.payload.chunks
    return SearchDocs(passages=[Passage(chunk=i, score=0.0, text=c) for i, c in enumerate(chunks)], n_chunks=len(chunks))


def passages_for(query: str, document: str) -> list[str]:
    """A plain text request (an outside client's): the document's best chunks for ``query`` by
    BM25, typed chunks first, each grown to whole sentences. No model: the request names no run
    and no model time is counted for it, and BM25 alone answers it at once."""
    size = 400  # doc_init's chunks, as the relay cuts them
    chunks = chunk_document(document, size)
    ranked = typed_rank(query, chunks)[:TOP_K]
    return [_expand(document, i * size, i * size + len(chunks[i])) for i, _ in ranked]


TOOL = Tool(
    "search", PacketType.DOC_INIT, PacketType.SEARCH_DOCS, run, description="BM25 over document chunks",
    passthrough=passthrough,
    uses_schemas=lambda s: "json" if s.decompose == "model" else None,  # the model's split of a question
    scores=True,  # query-likelihood reranking
    text=passages_for,
)
