"""``extract``: candidate facts, the retrieved sentences that bear on the question, each with
the model's reading of what it says about the question."""

from __future__ import annotations

from typing import Any

from ..frames import Packet, PacketType
from ..prompts import answer_prompt, clean_answer
from .answer_type import AnswerType, expected_type, spans
from .registry import Tool, ToolContext, register
from .text import rank, sentences

TOP_FACTS = 3
READ_FACTS = 2  # facts the model reads one by one (each is one short call)


async def run(ctx: ToolContext, packet: Packet) -> dict[str, Any]:
    seen: dict[str, None] = {}
    for passage in packet.payload.get("passages", []):
        for sent in sentences(str(passage.get("text", ""))):
            seen.setdefault(sent, None)
    pool = list(seen)
    if not pool:
        raise ValueError("search_docs carries no passages")
    atype = expected_type(packet.question)
    ranked = rank(packet.question, pool)
    if atype is not AnswerType.ANY:
        # A sentence with nothing of the asked-for kind (no year for "which year") cannot answer.
        ranked.sort(key=lambda r: not spans(pool[r[0]], atype, packet.question))
    facts: list[dict[str, Any]] = []
    for i, score in ranked[:TOP_FACTS]:
        fact: dict[str, Any] = {"text": pool[i], "score": round(score, 4)}
        if len(facts) < READ_FACTS:
            raw = await ctx.llm.complete(answer_prompt(pool[i], packet.question), ctx.usage)
            fact["candidate"] = clean_answer(raw)
        facts.append(fact)
    ctx.memory["facts"] = [f["text"] for f in facts]
    return {"facts": facts}


TOOL = register(
    Tool("extract", PacketType.SEARCH_DOCS, PacketType.EVENTS, run, description="question-relevant facts")
)
