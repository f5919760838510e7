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
import math
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import urlencode, urljoin

import httpx
from lemminflect import getAllInflections
from pydantic import BaseModel, ValidationError

from ..errors import ModelError
from ..mesh.frames import (
    DocInit,
    DocInitPacket,
    ErrorDetails,
    EventsPacket,
    PacketType,
    SearchDocsPacket,
    SubTaskPacket,
    SubTaskResult,
    TriplesPacket,
    chunk_document,
)
from ..mesh.tool import Tool
from ..pipeline import ToolContext
from ..pipeline import extract as extract_stage
from ..pipeline import reason as reason_stage
from ..pipeline import search as search_stage
from ..pipeline import triple as triple_stage
from ..pipeline.answer_type import AnswerType, names_number, spans, typed_rank
from ..pipeline.text import STOPWORDS, paraphrases, rank, sentences, stem, terms
from ..settings import ToolSettings
from ..web.reader import html_to_text
from .calculator import CalculatorError, calculate, format_number, to_number
from .catalog import (
    RESEARCH,
    TOOLS,
    UTILITY,
    AnswerQuestion,
    Calculate,
    Derive,
    FindFact,
    ReadWebpage,
    Summarize,
    WebSearch,
)
from .download import DownloadError, fetch
from .readings.dates import BORN_BEFORE, implied_dates, with_referents
from .readings.derive import PART_OF, implied
from .readings.phrases import parts_of_speech
from .readings.wording import CLAUSE_END, NUMBER, YEAR, inflected_verb

Handler = Callable[[ToolContext, Any], Awaitable[tuple[Any, Any, str | None]]]


def _document(ctx: ToolContext) -> DocInit:
    if ctx.doc is None or not ctx.doc.chunks:
        raise LookupError("this worker has not received the run's document (doc_init)")
    return ctx.doc



ORDINAL_OPPOSITE = {a: b for x, y in (("first", "last"), ("earliest", "latest")) for a, b in ((x, y), (y, x))}
ORDINAL_PAIR = re.compile(r"\b(?:first|last|earliest|latest)\b", re.IGNORECASE)
ADJUNCT = re.compile(r"(?:in|on|at|by|during|from|until|till)\s+(?:the\s+)?(?:(?:early|late|spring|summer|autumn|winter|end)\s+(?:of\s+)?)?(?:1[0-9]{3}|20[0-9]{2})\b", re.IGNORECASE)
PROPER_ONLY = re.compile(r"[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*")


def best_span(
    sentence: str, found: list[str], query: str, weight: Mapping[str, float] | None = None, unit: str = ""
) -> str:
    """Of the spans ``found`` in ``sentence``, the one the query points at.

    Where the step names the ``unit`` it counts, first a span of that unit ("612,000
    passengers" for passengers: direct evidence). Then the span whose clause shares the most
    informative of the query's words ("X, who was born in 1822, took charge in 1856": the clause
    with "took charge" for a query about taking charge). Words are weighted by ``weight`` (their
    rarity in the document: the subject's name is in every sentence and says little), and the
    query's names are left to break ties, since retrieval already used them to find the
    sentence. Then the span whose own unit words are the query's ("32 cars" for the cars), then
    the one nearest the query's words."""
    names = {t for w in re.findall(r"\b[A-Z][\w'-]*", query) for t in terms(w)}
    wanted = set(terms(query))
    plain = wanted - names
    said = set(paraphrases(sorted(plain))) - plain
    verbs = {t for w in query.split() if inflected_verb(w.strip(",.;:?!"), ing=False, present=False) for t in terms(w)}
    counted = set(terms(unit))
    years = set(YEAR.findall(query))  # "the prize fund in 2020": the span of 2020's clause
    clauses: list[str] = []
    cuts = list(CLAUSE_END.finditer(sentence))
    for k, part in enumerate(CLAUSE_END.split(sentence)):
        # "It won its first cup at Henley, Oxfordshire, in 1902 under ...": after a comma, a
        # bare name or a phrase that opens with a preposition and a year belongs to the clause
        # before it (after a semicolon a new statement begins)
        joined = k and cuts[k - 1].group(0).strip() == ","
        if joined and (ADJUNCT.match(part) or PROPER_ONLY.fullmatch(part.strip(" ."))):
            clauses[-1] = f"{clauses[-1]}, {part}"
        else:
            clauses.append(part)
    words = sentence.split()
    stems = [set(terms(w)) for w in words]
    positions = {t: [i for i, s in enumerate(stems) if t in s] for t in wanted}
    positions = {t: at for t, at in positions.items() if at}

    def distance(starts: list[int], among: set[str]) -> int:
        at = [p for t, p in positions.items() if t in among]
        return min(sum(min(abs(i - q) for q in ps) for ps in at) for i in starts)

    def counts_asked(span: str) -> int:
        # The unit the step asks for: the span's own words and the word after it that the span
        # left out because the query holds it ("14 electric | cars", "612,000 | passengers"); a
        # part "of them" counts what its whole counts ("12,400 objects, and 3,100 of them").
        # A unit of several words is read whole: "4,100 | red bricks" counts both of
        # "red bricks", "900 grey | bricks" one.
        at, reach = sentence.find(span), max(1, len(unit.split()) - len(span.split()) + 1)
        head = sentence[at + len(span) :].split()[:reach]
        if PART_OF.match(sentence[at + len(span) :]):
            whole = [m for m in NUMBER.finditer(sentence, 0, at) if not YEAR.fullmatch(m.group(0))]
            head = sentence[whole[-1].end() :].split()[:reach] if whole else []
        return len(counted & set(terms(" ".join(span.split()[1:] + head))))

    def overlap_of(text: str, verb: int = 1) -> float:
        # the query's words or their paraphrases ("died": "until his death in 1888"); in a
        # whole clause the query's own past verb may count ``verb`` times: it names the event
        # the year dates ("when the report was printed" in "surveyed the dunes until 1880;
        # the report was printed in 1884")
        got = set(terms(text))
        return sum((weight or {}).get(t, 1.0) * (verb if t in verbs else 1) for t in plain & got) + 0.5 * len(said & got)

    def gapped(k: int) -> str:
        # "a lecture room was added in 1907 and a reading room in 1921": a clause without a verb
        # of its own shares the verb of the one before it
        own = re.findall(r"[a-z]+", clauses[k])
        if k == 0 or any(inflected_verb(w, ing=False) for w in own):
            return clauses[k]
        return clauses[k] + " " + " ".join(w for w in re.findall(r"[a-z]+", clauses[k - 1]) if inflected_verb(w, ing=False))

    def key(span: str) -> tuple[int, int, float, float, int, int, int, int]:
        at = next((k for k, c in enumerate(clauses) if span in c), None)
        inside = clauses[at] if at is not None else None
        shared = overlap_of(gapped(at) if at is not None else sentence, verb=2)
        own_words = overlap_of(segment(inside or sentence, span, found))
        own = len(wanted & set(terms(" ".join(span.split()[1:]))))
        first = span.split()[0]
        starts = [i for i, w in enumerate(words) if first in w] or [len(words)]
        # Nearest the query's own words first ("until he retired in 1899"), then its names.
        near = (distance(starts, plain), distance(starts, wanted))
        dated = len(years & set(YEAR.findall(inside or "")))
        clause = set(terms(inside or sentence))
        return (-counts_asked(span) if counted else 0, -dated, -own_words, -shared, -len(names & clause), -own, *near)

    return min(found, key=key)


LEADING = re.compile(r"^\s*(?:(?:and|but|then|while)\s+)?(?:in|on|by|during|from|until|till|after|before|at)?\s*(?:the\s+)?(?:(?:early|late|spring|summer|autumn|winter|end)\s+(?:of\s+)?)?$", re.IGNORECASE)


def segment(clause: str, span: str, found: list[str]) -> str:
    """The words of ``clause`` that ``span`` belongs to when the clause holds other spans of
    ``found``: a span that modifies the noun after it ("the 1872 schoolroom") has that noun; one
    that opens its clause ("In 1907 a lecture room was added, and a reading room in 1921") the
    words after it up to the next span; any other, the words since the span before it ("a
    lecture room was added in 1907 and a reading room in 1921": the reading room is 1921's)."""
    at = clause.find(span)
    if at < 0:
        return clause
    end = at + len(span)
    after = clause[end:].split()[:1]
    # a word the lexicon does not know ("schoolroom") is taken for a noun, as an unknown word usually is
    if after and after[0].isalpha() and after[0].islower() and after[0] not in STOPWORDS and not parts_of_speech(after[0]) - {"NOUN"}:
        return after[0]
    others = sorted({(m, m + len(f)) for f in found if f != span for m in _starts(clause, f)})
    if not others:
        return clause
    before = max((b for a, b in others if b <= at), default=None)
    following = min((a for a, _ in others if a >= end), default=len(clause))
    if before is None and LEADING.match(clause[:at]):
        return clause[end:following]
    return clause[before or 0 : at]


def _starts(text: str, span: str) -> list[int]:
    return [m.start() for m in re.finditer(re.escape(span), text)]


def rarity(sents: list[str]) -> dict[str, float]:
    """Each term's inverse document frequency over the document's sentences."""
    df: dict[str, int] = {}
    for s in sents:
        for t in set(terms(s)):
            df[t] = df.get(t, 0) + 1
    return {t: math.log((len(sents) + 1) / n) for t, n in df.items()}


IDENTIFIER = re.compile(r"\b([a-z]+)(\d+)\b|(?<![\d.,])(\d+(?:\.\d+)+)(?![\d.,]*\d)", re.IGNORECASE)


def identifiers(text: str) -> dict[str, set[str]]:
    """Names that carry a number, by the name they number: ``{"camp": {"camp2"}}`` for "Camp2",
    ``{"model": {"4.2"}}`` for "Model 4.2" (a version is one after a capitalised word, or with two
    dots, under ``"."``; "2.5 million" is none)."""
    out: dict[str, set[str]] = {}
    for m in IDENTIFIER.finditer(text):
        if m.group(1):
            out.setdefault(m.group(1).lower(), set()).add(m.group(0).lower())
        elif names_number(text, m.start()):
            name = re.sub(r"\W", "", text[: m.start()].split()[-1].lower())  # '"Model 4.3"' is the model's
            out.setdefault(name, set()).add(m.group(3))
        elif m.group(3).count(".") > 1:
            out.setdefault(".", set()).add(m.group(3))
    return out


def with_identifiers(sents: list[str]) -> list[str]:
    """``sents`` for ranking, each led by the numbered names told before it that it names none
    of its own of the same name: in "Model 4.2 shipped in 2002. ... At the time, there were 8500
    parts", the count is Model 4.2's, until another model is named."""
    out: list[str] = []
    recent: dict[str, set[str]] = {}  # name -> the numbers last told with it
    for s in sents:
        own = identifiers(s)
        carried = sorted({t for kind, tokens in recent.items() if kind not in own for t in tokens})
        out.append(f"({' '.join(carried)}) {s}" if carried else s)
        recent |= own
    return out


def agent_verb_forms(word: str) -> set[str]:
    """The stems of the verb an agent noun names ("leader": lead, led, leads, leading; "manager",
    "founder", "director"), so that "X became leader" finds "X led it"."""
    for cut in ("er", "r", "or"):
        if word.endswith(cut) and len(word) > len(cut) + 2:
            for verb in (word[: -len(cut)], word[: -len(cut)] + "e"):  # "leader", "manager"
                forms = getAllInflections(verb, upos="VERB")
                if forms:
                    return {stem(f) for fs in forms.values() for f in fs}
    return set()


def _excluded(span: str, value: Any, exclude: list[str | int | float]) -> bool:
    for other in exclude:
        if isinstance(other, int | float) and not isinstance(other, bool):
            if value is not None and float(value) == float(other):
                return True
        elif span.strip().lower() == str(other).strip().lower() or (
            value is not None and to_number(str(other)) == value
        ):
            return True
    return False


async def find_fact(ctx: ToolContext, task: FindFact) -> tuple[Any, Any, str | None]:
    """``(span, its value, the sentence it came from)``; a span (or value) in ``exclude`` is
    passed over for the next best."""
    doc = "".join(_document(ctx).chunks)
    sents = sentences(doc)
    atype = AnswerType(task.answer_type)
    # "million" is the number's scale, not its unit: a span must keep it ("7.8 million")
    task = task.model_copy(
        update={k: re.sub(r"\b(?:thousand|million|billion)s?\b", "", getattr(task, k)).strip() for k in ("query", "unit")}
    )
    numeric = atype in (AnswerType.YEAR, AnswerType.NUMBER)
    # A year may be one the document implies ("was 23 when he took the post in 1883" dates a
    # birth): those dates, made explicit, are candidates like the document's own sentences.
    dated = {d.text: d for d in implied_dates(sents, year_finder(sents))} if atype in (AnswerType.YEAR, AnswerType.WHEN) else {}
    other_end = {"start": "end", "end": "start"}.get(task.period)
    dated = {text: d for text, d in dated.items() if d.kind != other_end}
    # "It was built in 1851" is about what the sentence before named; "This model had 640
    # parts" about the numbered name told just before it
    about = with_identifiers(with_referents(sents)) + list(dated)
    sents = sents + list(dated)
    ranked = [index for index, _score in typed_rank(task.query, about, atype)[:5]]
    names = {t for w in re.findall(r"\b[A-Z][\w'-]*", task.query) for t in terms(w)}
    plain = {t for t in terms(task.query) if len(t) > 1} - names
    years = set(re.findall(r"\b(?:1[0-9]{3}|20[0-9]{2})\b", task.query))
    # A number the query states names or bounds what is asked ("Model 4.2", "of the 40 crew"):
    # it is never the answer.
    stated = set(re.findall(r"\d+(?:[.,]\d+)*", task.query))
    # The sentence of the query's year first ("output in 1950"), then one with more of the
    # query's own words before one that only shares its names: "X, who was born in 1779"
    # before "a proposal made in 1811 by X" for "X born".
    words = {i: set(terms(about[i])) for i in ranked}
    # "the first sailing" is not told by a sentence of the last one (and the other way round)
    ordinals = {w.lower() for w in ORDINAL_PAIR.findall(task.query)}
    opposite = {ORDINAL_OPPOSITE[w] for w in ordinals}

    asked_ids = identifiers(task.query)

    def contradicts(i: int) -> bool:
        said_here = {w.lower() for w in ORDINAL_PAIR.findall(sents[i])}
        if opposite & said_here and not ordinals & said_here:
            return True
        # "Camp5" is not "Camp2", nor "Model 4.0" "Model 4.2": a sentence that names
        # another of the query's kind of identifier and not the query's own is about that other.
        here = identifiers(about[i])
        return any(here.get(kind, set()) and not ids & here[kind] for kind, ids in asked_ids.items())

    # each of the query's words once, by itself or by a paraphrase ("spend" and "fund" both
    # stand for "cost": two of them are no more of the query than one)
    by_word = {w: {w, *paraphrases([w])} for w in plain}
    for raw in re.findall(r"[a-z]+", task.query.lower()):
        if stem(raw) in by_word:
            by_word[stem(raw)] |= agent_verb_forms(raw)

    def covered(i: int) -> int:
        return sum(1 for forms in by_word.values() if forms & words[i])

    ranked.sort(key=lambda i: (contradicts(i), -len(years & words[i]), -covered(i), -len(names & words[i]), -len(plain & words[i])))
    # A year that dates a birth answers only a question about the birth.
    birth = bool(re.search(r"\b(?:born|birth)", task.query, re.IGNORECASE))
    skip_births = atype in (AnswerType.YEAR, AnswerType.WHEN) and not birth
    # A birth is someone's: an implied one ("Y was born in 1931", which names whose it is) that
    # shares none of the query's other words is another's ("X born"). A document's own sentence
    # may say "she" and is kept.
    subject = set(terms(re.sub(r"\b(?:born|birth)\b", "", task.query, flags=re.IGNORECASE)))
    if birth and subject:
        ranked = [i for i in ranked if sents[i] not in dated or subject & words[i]]
    if birth and atype is AnswerType.YEAR and names:
        # Only a sentence that tells a birth (or life dates, made explicit above) dates a named
        # person's: a year of their death or work is no birth year, and an age from it is
        # nonsense. (A thing's "birth" is its making, told in other words.)
        ranked = [i for i in ranked if re.search(r"\b(?:born|birth)", about[i], re.IGNORECASE)]
    for index in ranked:
        sentence = sents[index]
        if atype is AnswerType.ANY:
            return sentence, None, sentence
        found = [
            s for s in spans(sentence, atype, task.query)
            if not _excluded(s, to_number(s) if numeric else None, task.exclude)
            and not (atype is AnswerType.NUMBER and s.split()[0] in stated)
            and not (skip_births and BORN_BEFORE.search(sentence[: sentence.find(s)]))
        ]  # fmt: skip
        if found:
            span = best_span(sentence, found, task.query, rarity(sents), task.unit)
            if sentence in dated:
                sentence = f"{sentence} ({dated[sentence].expression}, from: {dated[sentence].source})"
            return span, to_number(span) if numeric else None, sentence
    raise LookupError(f"no {atype.value} for {task.query!r} in the document")


def year_finder(sents: list[str]) -> Callable[[str, str], int | None]:
    """A lookup of the year the document states for an event, from any sentence but ``skip``
    (the one the event was read from: its other years date its other clauses)."""

    def find_year(query: str, skip: str) -> int | None:
        for index, score in typed_rank(query, sents, AnswerType.YEAR)[:3]:
            found = spans(sents[index], AnswerType.YEAR, query)
            if found and sents[index] != skip and score > 0:  # a sentence that shares no word says nothing of it
                return int(best_span(sents[index], found, query, rarity(sents)))
        return None

    return find_year


async def derive(ctx: ToolContext, task: Derive) -> tuple[Any, Any, str | None]:
    """``(the expression, the expression, its sentence)`` of a calculation the question implies."""
    sents = sentences("".join(_document(ctx).chunks))
    reading = implied(task.question, sents, year_finder(sents))
    if reading is None:
        raise LookupError(f"the document implies no calculation for {task.question!r}")
    return reading.expression, reading.expression, reading.sentence


async def summarize(ctx: ToolContext, task: Summarize) -> tuple[Any, Any, str | None]:
    """``(the summary, how many sentences, None)``: the best sentences for the topic (BM25 and
    proximity, as retrieval ranks them), put back in the document's order."""
    sents = sentences("".join(_document(ctx).chunks))
    chosen = sorted(i for i, score in rank(task.topic, sents)[: task.sentences] if score > 0)
    if not chosen:
        raise LookupError(f"the document says nothing about {task.topic!r}")
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
        "find_fact": (FindFact, find_fact),
        "derive": (Derive, derive),
        "answer_question": (AnswerQuestion, answer_question),
        "summarize": (Summarize, summarize),
        "web_search": (WebSearch, web_search),
        "read_webpage": (ReadWebpage, read_webpage),
    },
    UTILITY: {"calculator": (Calculate, calculator)},
}
# Every worker tool of the catalog has a handler, and no handler is missing from the catalog.
assert {(r, t) for r, tools in HANDLERS.items() for t in tools} == {k for k in TOOLS if k[0] in HANDLERS}


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
        return SubTaskResult(
            **reply, status="COMPLETED", result_data=data, processed_result_data=value, evidence=evidence
        )

    return run


def _failed(reply: dict[str, Any], message: str, kind: str) -> SubTaskResult:
    return SubTaskResult(**reply, status="FAILED", error_details=ErrorDetails(message=message, type=kind))


WORKER_TOOLS: tuple[Tool, ...] = tuple(
    Tool(
        role, PacketType.SUBTASK, PacketType.RESULT, worker(role), description=f"{role} worker of the orchestrated strategy",
        reads=frozenset({PacketType.DOC_INIT}) if role == RESEARCH else frozenset(),
    )
    for role in HANDLERS
)  # fmt: skip
