"""``triple``: subject-relation-object triples from the extracted facts."""

from __future__ import annotations

from ..errors import ToolError
from ..mesh.frames import EventsPacket, PacketType
from ..mesh.payloads import Triple, Triples
from ..models.prompts import TRIPLE_SCHEMA, TripleReply, parse_reply, parse_triple, triple_prompt
from ..tools.tool import Tool, ToolContext

# Tokens for a JSON triple: three short phrases and the keys around them.
TRIPLE_TOKENS = 64


async def read_triple(ctx: ToolContext, sentence: str) -> tuple[str, str, str] | None:
    """The model's triple for ``sentence``: held to the triple schema where the backend takes
    one, else written as ``(subject | relation | object)`` and parsed. None if there is none."""
    if not ctx.schemas:
        return parse_triple(await ctx.llm.complete(triple_prompt(sentence), ctx.usage, num_predict=40))
    raw = await ctx.llm.complete(
        triple_prompt(sentence, structured=True), ctx.usage, num_predict=TRIPLE_TOKENS, stop=(), schema=TRIPLE_SCHEMA
    )
    reply = parse_reply(TripleReply, raw)
    parts = (reply.subject.strip(), reply.relation.strip(), reply.object.strip()) if reply else ("", "", "")
    return parts if all(parts) else None


async def run(ctx: ToolContext, packet: EventsPacket) -> Triples:
    facts = packet.payload.facts
    if not facts:
        raise ToolError("events carries no facts")
    triples: list[Triple] = []
    for fact in facts:
        parsed = await read_triple(ctx, fact.text)
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
    uses_schemas=lambda _s: "phrases",  # triples
)
