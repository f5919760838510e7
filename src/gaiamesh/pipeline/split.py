"""Whether a question needs two facts, and its two questions: by the hop splitter's rules
(``hops.decompose``) or as the model writes them (``DECOMPOSE=model``).

``search`` decides once and hands the split on in its packet, so ``extract`` asks the same two
questions it retrieved for.
"""

from __future__ import annotations

from typing import Literal

from ..mesh.payloads import Split
from ..models.prompts import SPLIT_SCHEMA, SplitReply, parse_reply, split_prompt
from ..tools.tool import ToolContext
from .hops import Decomposition, decompose

SPLIT_TOKENS = 96  # a JSON object with two short questions


async def by_model(ctx: ToolContext, question: str) -> Decomposition | None:
    """The model's split of ``question`` (held to the split schema where the backend takes one),
    or None when it says one fact answers it, or writes no usable split."""
    schema = SPLIT_SCHEMA if ctx.schemas else None
    stop = () if schema else ("\n",)
    raw = await ctx.llm.complete(split_prompt(question), ctx.usage, num_predict=SPLIT_TOKENS, stop=stop, schema=schema)
    reply = parse_reply(SplitReply, raw)
    ctx.memory["split"] = reply.model_dump() if reply else {"unreadable": raw[:300]}
    if reply is None or not reply.two_facts or "{bridge}" not in reply.second or not reply.first.strip():
        return None
    return Decomposition(inner=reply.first.strip(), outer=reply.second.strip())


async def split_question(ctx: ToolContext, question: str) -> Split:
    """The split ``search`` hands on: the rules' or the model's (``DECOMPOSE``)."""
    by: Literal["rules", "model"] = "model" if ctx.settings is not None and ctx.settings.decompose == "model" else "rules"
    hop = await by_model(ctx, question) if by == "model" else decompose(question)
    return Split(by=by, inner=hop.inner, outer=hop.outer) if hop else Split(by=by)


def as_decomposition(split: Split) -> Decomposition | None:
    return Decomposition(inner=split.inner, outer=split.outer) if split.inner and split.outer else None
