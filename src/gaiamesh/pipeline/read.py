"""The model's reading of what a context answers to a question: the one call ``extract`` and
``reason`` make to read an answer.

Where the backend holds output to a JSON schema, the reading is a *typed answer*: one of the
typed candidates the context offers (its spans of the asked-for kind, the readings so far), so
the model chooses among answers of the right form instead of writing one; or, with fewer than
two candidates, a short string. Elsewhere it is a free completion, cleaned.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..mesh.tool import ToolContext
from ..models.prompts import AnswerReply, answer_prompt, answer_schema, clean_answer, parse_reply

# Tokens for a JSON reply: the braces and key, and a phrase of up to REPLY_CHARS characters.
REPLY_TOKENS = 48


async def read_answer(ctx: ToolContext, context: str, question: str, choices: Sequence[str] = ()) -> str:
    """The model's answer to ``question`` from ``context``: held to ``choices`` where there
    are two or more and the backend takes a schema; "" when a JSON reply was cut short."""
    if not ctx.schemas:
        return clean_answer(await ctx.llm.complete(answer_prompt(context, question), ctx.usage))
    picks = list(dict.fromkeys(c for c in choices if c))
    schema = answer_schema(picks if len(picks) > 1 else None)
    raw = await ctx.llm.complete(
        answer_prompt(context, question, structured=True), ctx.usage, num_predict=REPLY_TOKENS, stop=(), schema=schema
    )
    reply = parse_reply(AnswerReply, raw)
    return clean_answer(reply.answer) if reply is not None else ""
