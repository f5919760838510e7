"""``reason``: the short final answer, from the facts and triples, tagged ``final_answer``."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..frames import FINAL_ANSWER_TAG, Packet, PacketType
from ..prompts import answer_prompt, clean_answer
from .registry import Tool, ToolContext, register
from .text import terms


def _supported(answer: str, facts: list[str]) -> bool:
    """True when the answer's content words occur in the facts (it was read, not invented)."""
    words = set(terms(answer))
    pool = set(terms(" ".join(facts)))
    return bool(words) and words <= pool


async def run(ctx: ToolContext, packet: Packet) -> dict[str, Any]:
    facts = [str(f["text"]) for f in packet.payload.get("facts", [])]
    candidates = [str(f["candidate"]) for f in packet.payload.get("facts", []) if f.get("candidate")]
    triples: list[dict[str, str]] = list(packet.payload.get("triples", []))
    if not facts:
        raise ValueError("triples packet carries no facts")
    answer = clean_answer(await ctx.llm.complete(answer_prompt(" ".join(facts), packet.question), ctx.usage))
    method = "read"
    if not _supported(answer, facts):
        # Fall back on what extract read off a single fact, preferring a candidate two readers agree on.
        votes = Counter(c for c in candidates if _supported(c, facts))
        if votes:
            answer, method = votes.most_common(1)[0][0], "candidate"
    ctx.memory["answer"] = answer
    return {"answer": answer, "method": method, "facts_used": len(facts), "triples_seen": len(triples)}


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
