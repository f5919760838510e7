"""``triple``: subject-relation-object triples from the extracted facts."""

from __future__ import annotations

from ..mesh.frames import EventsPacket, PacketType, Triple, Triples
from ..mesh.tool import Tool, ToolContext
from ..models.prompts import parse_triple, triple_prompt


async def run(ctx: ToolContext, packet: EventsPacket) -> Triples:
    facts = packet.payload.facts
    if not facts:
        raise ValueError("events carries no facts")
    triples: list[Triple] = []
    for fact in facts:
        raw = await ctx.llm.complete(triple_prompt(fact.text), ctx.usage, num_predict=40)
        parsed = parse_triple(raw)
        if parsed:
            s, r, o = parsed
            triples.append(Triple(subject=s, relation=r, object=o, fact=fact.text))
    ctx.memory["triples"] = [t.model_dump() for t in triples]
    # Facts travel on so that `reason` can answer from the text and check it against the triples.
    events = packet.payload
    return Triples(triples=triples, facts=facts, resolved_question=events.resolved_question, hops=events.hops)


def passthrough(packet: EventsPacket) -> Triples:
    """Ablated: the facts handed on, with no triples."""
    events = packet.payload
    return Triples(triples=[], facts=events.facts, resolved_question=events.resolved_question, hops=events.hops)


TOOL = Tool(
    "triple", PacketType.EVENTS, PacketType.TRIPLES, run, description="subject-relation-object triples",
    passthrough=passthrough,
)
