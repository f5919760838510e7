"""The tools a plan may name: each role's tools and the input model each one validates.

The orchestrator validates plans against this catalog; the workers validate each sub-task's
input against the same models when it arrives, so an input schema is written once.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .plan import ToolSpec


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FindFact(_Input):
    """Find one fact of the run's document: the sentence that best matches ``query`` and, in it,
    the span of the asked-for kind."""

    query: str = Field(min_length=1, max_length=500)
    answer_type: Literal["year", "date", "number", "person", "place", "any"] = "any"
    # Values another step already found: a second fact of the same kind must be a different one.
    exclude: list[str | int | float] = Field(default_factory=list, max_length=10)


class AnswerQuestion(_Input):
    """Answer a question about the run's document with the pipeline's method (search, extract,
    triples, reason), inside one worker."""

    question: str = Field(min_length=1, max_length=1000)


class Calculate(_Input):
    """Evaluate an arithmetic expression (numbers, + - * / // % **, parentheses, abs, round,
    min, max)."""

    expression: str = Field(min_length=1, max_length=500)


RESEARCH = "research"
UTILITY = "utility"
ORCHESTRATOR = "orchestrator"

TOOLS: dict[tuple[str, str], ToolSpec] = {
    (s.role, s.name): s
    for s in (
        ToolSpec(RESEARCH, "find_fact", FindFact, FindFact.__doc__ or ""),
        ToolSpec(RESEARCH, "answer_question", AnswerQuestion, AnswerQuestion.__doc__ or ""),
        ToolSpec(UTILITY, "calculator", Calculate, Calculate.__doc__ or ""),
    )
}
WORKER_ROLES = frozenset({RESEARCH, UTILITY})
