"""The tools a plan may name (:data:`PLAN_TOOLS`, by role and name): each role's tools and the
input model each one validates. They are a plan's steps, run by the team's agents, not the
agents' own declared tools (``orchestrated.TOOLS``).

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
    # What the number counts, where the question says it ("by how many passengers"): a span of
    # that unit first ("612,000 passengers", not "12,000 crossings" of the same sentence).
    unit: str = Field(default="", max_length=100)
    # The fact asked as a question, for the model that chooses among the candidates; default:
    # the query, asked by the answer's kind ("In what year: the bridge opened?").
    question: str = Field(default="", max_length=500)


class AnswerQuestion(_Input):
    """Answer a question about the run's document (or about ``text``, e.g. a web page read by
    an earlier step) with the pipeline's method (search, extract, triples, reason), inside one
    worker."""

    question: str = Field(min_length=1, max_length=1000)
    text: str | None = Field(default=None, max_length=200_000)


class Summarize(_Input):
    """The ``sentences`` sentences of the run's document that say most about ``topic``, in the
    document's order (an extractive summary)."""

    topic: str = Field(min_length=1, max_length=500)
    sentences: int = Field(default=5, ge=1, le=30)


class WebSearch(_Input):
    """Search the offline web; the result is the hits (title, url, snippet), its processed value
    the first hit's URL."""

    query: str = Field(min_length=1, max_length=500)
    limit: int = Field(default=5, ge=1, le=20)


class ReadWebpage(_Input):
    """Fetch a web page and read it as text (navigation, scripts and boilerplate dropped); the
    processed value is the page's title."""

    url: str = Field(min_length=1, max_length=2000)


class FileOperation(_Input):
    """The orchestrator's own files, in the task's workspace: create, read, append, overwrite,
    list, or create_pdf_from_text (``content`` is the text, ``title`` its heading)."""

    operation: Literal["create", "read", "append", "overwrite", "list", "create_pdf_from_text"]
    path: str = Field(default=".", min_length=1, max_length=200)
    content: str = Field(default="", max_length=1_000_000)
    title: str = Field(default="", max_length=200)


class Download(_Input):
    """Download ``url`` into the task's workspace as ``path`` (size cap, timeout, address policy)."""

    url: str = Field(min_length=1, max_length=2000)
    path: str = Field(min_length=1, max_length=200)


class Calculate(_Input):
    """Evaluate an arithmetic expression (numbers, + - * / // % **, parentheses, abs, round,
    min, max)."""

    expression: str = Field(min_length=1, max_length=500)


RESEARCH = "research"
UTILITY = "utility"
ORCHESTRATOR = "orchestrator"

PLAN_TOOLS: dict[tuple[str, str], ToolSpec] = {
    (s.role, s.name): s
    for s in (
        ToolSpec(RESEARCH, "find_fact", FindFact, FindFact.__doc__ or ""),
        ToolSpec(RESEARCH, "answer_question", AnswerQuestion, AnswerQuestion.__doc__ or ""),
        ToolSpec(RESEARCH, "summarize", Summarize, Summarize.__doc__ or ""),
        ToolSpec(RESEARCH, "web_search", WebSearch, WebSearch.__doc__ or ""),
        ToolSpec(RESEARCH, "read_webpage", ReadWebpage, ReadWebpage.__doc__ or ""),
        ToolSpec(UTILITY, "calculator", Calculate, Calculate.__doc__ or ""),
        ToolSpec(ORCHESTRATOR, "file_system", FileOperation, FileOperation.__doc__ or ""),
        ToolSpec(ORCHESTRATOR, "file_downloader", Download, Download.__doc__ or ""),
    )
}
WORKER_ROLES = frozenset({RESEARCH, UTILITY})
