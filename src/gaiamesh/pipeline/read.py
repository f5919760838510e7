"""The model's reading of what a context answers to a question: the one call ``extract`` and
``reason`` make to read an answer.

Where the agent holds its model's output to schemas (``ToolContext.schemas``), the reading is a
typed answer: a JSON object whose ``answer`` is a short string. Elsewhere it is a free
completion, cleaned. (Holding the answer to the typed candidates themselves, an ``enum``, was
measured and dropped: a 270M model's greedy choice among them answered worse than its free
reading, 0.3 against 0.6 on ``tasks/`` with hand-set weights; docs/results/2026-11-26-structured-output.md.)
"""

from __future__ import annotations

from ..models.prompts import AnswerReply, answer_prompt, answer_schema, clean_answer, parse_reply
from ..tools.tool import ToolContext

# Tokens for a JSON reply: the braces and key, and a phrase of up to REPLY_CHARS characters.
REPLY_TOKENS = 48


async def read_answer(ctx: ToolContext, context: str, question: str) -> str:
    """The model's answer to ``question`` from ``context``; "" when a JSON reply was cut short."""
    if not ctx.schemas:
        return clean_answer(await ctx.llm.complete(answer_prompt(context, question), ctx.usage))
    raw = await ctx.llm.complete(
        answer_prompt(context, question, structured=True), ctx.usage, num_predict=REPLY_TOKENS, stop=(),
        schema=answer_schema(),
    )  # fmt: skip
    reply = parse_reply(AnswerReply, raw)
    return clean_answer(reply.answer) if reply is not None else ""
