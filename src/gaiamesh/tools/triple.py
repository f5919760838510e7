"""``triple``: subject-relation-object triples from the extracted facts."""

from __future__ import annotations

from typing import Any

from ..frames import Packet, PacketType
from ..prompts import parse_triple, triple_prompt
from .registry import Tool, ToolContext, register


async def run(ctx: ToolContext, packet: Packet) -> dict[str, Any]:
    facts: list[dict[str, Any]] = list(packet.payload.get("facts", []))
    if not facts:
        raise ValueError("events carries no facts")
    triples: list[dict[str, str]] = []
    for fact in facts:
        raw = await ctx.llm.complete(triple_prompt(str(fact["text"])), ctx.usage, num_predict=40)
        parsed = parse_triple(raw)
        if parsed:
            s, r, o = parsed
            triples.append({"subject": s, "relation": r, "object": o, "fact": str(fact["text"])})
    ctx.memory["triples"] = triples
    # Facts travel on so that `reason` can answer from the text and check it against the triples.
    forward: dict[str, Any] = {
        k: packet.payload[k] for k in ("resolved_question", "hops") if k in packet.payload
    }
    return {"triples": triples, "facts": facts, **forward}


TOOL = register(
    Tool("triple", PacketType.EVENTS, PacketType.TRIPLES, run, description="subject-relation-object triples")
)
