"""The worker tools of the orchestrated strategy: one agent per role, a sub-task in, a result out.

- ``research``: facts from the run's own document (it reads ``doc_init`` like every agent):
  ``find_fact`` (the sentence that best matches a query, and in it the span of the asked-for
  kind), ``answer_question`` (the pipeline's four stages, run inside this one worker).
- ``utility``: ``calculator`` (see :mod:`.calculator`).

A worker never answers with an ``error`` packet: a sub-task it cannot do comes back ``FAILED``
with the reason, and the orchestrator's plan decides what happens next.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlencode, urljoin

import httpx
from pydantic import BaseModel, ValidationError

from ..errors import ModelError
from ..mesh.frames import (
    DocInitPacket,
    EventsPacket,
    PacketType,
    SearchDocsPacket,
    SubTaskPacket,
    TriplesPacket,
    chunk_document,
)
from ..mesh.payloads import DocInit, ErrorDetails, Maker, SubTaskResult
from ..pipeline import extract as extract_stage
from ..pipeline import reason as reason_stage
from ..pipeline import search as search_stage
from ..pipeline import triple as triple_stage
from ..pipeline.text import rank, sentences
from ..settings import ToolSettings
from ..tools.tool import Tool, ToolContext
from ..web.reader import html_to_text
from . import reading
from .calculator import CalculatorError, calculate, format_number, to_number
from .download import DownloadError, fetch
from .plan_tools import (
    PLAN_TOOLS,
    RESEARCH,
    UTILITY,
    AnswerQuestion,
    Calculate,
    FindFact,
    ReadWebpage,
    Summarize,
    WebSearch,
)

Handler = Callable[[ToolContext, Any], Awaitable[tuple[Any, Any, str | None]]]


def _document(ctx: ToolContext) -> DocInit:
    if ctx.doc is None or not ctx.doc.chunks:
        raise LookupError("this worker has not received the run's document (doc_init)")
    return ctx.doc



async def summarize(ctx: ToolContext, task: Summarize) -> tuple[Any, Any, str | None]:
    """``(the summary, how many sentences, None)``: of the sentences retrieval ranks best for
    the topic (BM25 and proximity), those the model chooses, in the document's order."""
    sents = sentences("".join(_document(ctx).chunks))
    pool = [i for i, score in rank(task.topic, sents)[: reading.SUMMARY_POOL * task.sentences + 2] if score > 0]
    if not pool:
        raise LookupError(f"the document says nothing about {task.topic!r}")
    picked = await reading.choose_sentences(ctx, task.topic, [sents[i] for i in pool], task.sentences)
    chosen = sorted(pool[r] for r in picked)
    return " ".join(sents[i] for i in chosen), len(chosen), None


def _settings(ctx: ToolContext) -> ToolSettings:
    if ctx.settings is None:
        raise LookupError("this worker has no settings (WEB_URL)")
    return ctx.settings


async def web_search(ctx: ToolContext, task: WebSearch) -> tuple[Any, Any, str | None]:
    """``(hits, the first hit's URL, their titles)`` from the offline web's search."""
    settings = _settings(ctx)
    url = f"{settings.web_url.rstrip('/')}/search?{urlencode({'q': task.query, 'limit': task.limit})}"
    chunks: list[bytes] = []
    await fetch(url, settings.download_allowlist(), settings.download_max_bytes, settings.download_timeout, chunks.append)
    hits = [
        {**hit, "url": urljoin(settings.web_url, hit["url"])} for hit in json.loads(b"".join(chunks))["results"]
    ]
    if not hits:
        raise LookupError(f"the web has no page for {task.query!r}")
    return hits, hits[0]["url"], "; ".join(h["title"] for h in hits)


async def read_webpage(ctx: ToolContext, task: ReadWebpage) -> tuple[Any, Any, str | None]:
    """``(the page's text, its title, its URL)``; a relative URL is on the offline web."""
    settings = _settings(ctx)
    url = urljoin(settings.web_url, task.url)
    chunks: list[bytes] = []
    final, _ = await fetch(url, settings.download_allowlist(), settings.download_max_bytes, settings.download_timeout, chunks.append)
    title, text = html_to_text(b"".join(chunks).decode("utf-8", errors="replace"))
    if not text:
        raise LookupError(f"{final} has no readable text")
    return text, title, final


async def answer_question(ctx: ToolContext, task: AnswerQuestion) -> tuple[Any, Any, str | None]:
    """The pipeline's answer to ``task.question``: search, extract, triple and reason in turn,
    over the run's document or over ``task.text``."""
    doc = DocInit(chunks=chunk_document(task.text)) if task.text else _document(ctx)
    # The stages' packets, built here and never sent: the four stages run inside this worker.
    envelope: dict[str, Any] = {"run_id": "local", "src": "research", "seq": 0, "question": task.question}
    ctx.question = task.question
    passages = await search_stage.run(ctx, DocInitPacket(payload=doc, **envelope))
    events = await extract_stage.run(ctx, SearchDocsPacket(payload=passages, **envelope))
    triples = await triple_stage.run(ctx, EventsPacket(payload=events, **envelope))
    final = await reason_stage.run(ctx, TriplesPacket(payload=triples, **envelope))
    value = to_number(final.answer)
    return final.answer, value, " ".join(f.text for f in triples.facts[:2]) or None


async def calculator(ctx: ToolContext, task: Calculate) -> tuple[Any, Any, str | None]:
    value = calculate(task.expression)
    return format_number(value), value, task.expression


HANDLERS: dict[str, dict[str, tuple[type[BaseModel], Handler]]] = {
    RESEARCH: {
        "find_fact": (FindFact, reading.find_fact),
        "answer_question": (AnswerQuestion, answer_question),
        "summarize": (Summarize, summarize),
        "web_search": (WebSearch, web_search),
        "read_webpage": (ReadWebpage, read_webpage),
    },
    UTILITY: {"calculator": (Calculate, calculator)},
}
# Every worker tool of the catalog has a handler, and no handler is missing from the catalog.
assert {(r, t) for r, tools in HANDLERS.items() for t in tools} == {k for k in PLAN_TOOLS if k[0] in HANDLERS}


def worker(role: str) -> Callable[[ToolContext, SubTaskPacket], Awaitable[SubTaskResult]]:
    """The tool function of a worker of ``role``: validate the input, run the named tool, and
    answer ``COMPLETED`` or ``FAILED`` with the reason."""
    tools = HANDLERS[role]

    async def run(ctx: ToolContext, packet: SubTaskPacket) -> SubTaskResult:
        task = packet.payload
        reply: dict[str, Any] = {"sub_task_id": task.sub_task_id, "parent_task_id": task.parent_task_id, "worker_agent_role": role}
        if task.assigned_agent_role != role:
            return _failed(reply, f"this worker's role is {role!r}, not {task.assigned_agent_role!r}", "WrongRole")
        if task.tool_name not in tools:
            return _failed(reply, f"role {role!r} has no tool {task.tool_name!r} (has: {', '.join(tools)})", "UnknownTool")
        model, handler = tools[task.tool_name]
        calls = ctx.usage.calls
        try:
            data, value, evidence = await handler(ctx, model.model_validate(task.sub_task_input))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "input"
            return _failed(reply, f"{task.tool_name}: input {where}: {first['msg']}", "BadInput")
        except CalculatorError as exc:
            return _failed(reply, f"{task.tool_name}: {exc}", "CalculatorError")
        except DownloadError as exc:
            return _failed(reply, f"{task.tool_name}: {exc}", "FetchFailed")
        except httpx.HTTPError as exc:
            return _failed(reply, f"{task.tool_name}: {exc!r}", "FetchFailed")
        except (LookupError, ValueError) as exc:
            return _failed(reply, f"{task.tool_name}: {exc}", "NotFound")
        except ModelError as exc:
            return _failed(reply, f"{task.tool_name}: {exc}", "ModelUnavailable")
        ctx.memory.setdefault("results", []).append({"step": task.sub_task_id, "result": data})
        made_by: Maker = "model" if ctx.usage.calls > calls else "tool"  # a step that asked the model is its choice
        return SubTaskResult(
            **reply, status="COMPLETED", result_data=data, processed_result_data=value, evidence=evidence,
            made_by=made_by,
        )  # fmt: skip

    return run


def _failed(reply: dict[str, Any], message: str, kind: str) -> SubTaskResult:
    return SubTaskResult(**reply, status="FAILED", error_details=ErrorDetails(message=message, type=kind))


WORKER_TOOLS: tuple[Tool, ...] = tuple(
    Tool(
        role, PacketType.SUBTASK, PacketType.RESULT, worker(role), description=f"{role} worker of the orchestrated strategy",
        reads=frozenset({PacketType.DOC_INIT}) if role == RESEARCH else frozenset(),
        scores=role == RESEARCH,  # reading: a fact among candidates, a summary's sentences
    )
    for role in HANDLERS
)  # fmt: skip
