"""Each heuristic's worth: quality on the held-out sets with and without it (2026-11-27).

    PYTHONPATH=src OLLAMA_HOST=http://127.0.0.1:PORT GAIAMESH_ENV_FILE= \
        python docs/results/2026-11-27-heuristics-measure.py CACHE.jsonl OUT.json [RULE ...]

The toggle exists only here: a rule is switched off by replacing, in the modules that use it,
its name with a version that never fires (a pattern that matches nothing, an empty word list, a
function that says no). No setting of the product turns a heuristic off.

Every task runs first with all rules (``base``), then once per rule without it. The model's
answers are cached by request (temperature 0, seed 42: the same request gets the same answer),
so a run without a rule asks the model only where the rule changed what is asked; a task whose
requests and answer are all the same as ``base`` is one where the rule does not fire.

Pipeline sets run the pipeline's four stages in-process (``workers.answer_question``, as the
orchestrated team's worker runs them); arithmetic sets run ``gaiamesh plans``' dry run of the
orchestrated team (``dryrun.dry_run``). Answers are scored by exact match.

The first pass (``CACHE.jsonl`` given as ``stand-in``: no model) ran at commit a88ce0e, where the
rules that then went (``asks_age``, the name particles, the conjunctions of ``reason``'s clause
parts, ``NAMED_HEAD``, the ``age_in_year`` template, and after the second pass ``possessive``)
were still there with their toggles; they are gone from this list with them. With the model, ``FIRED=first-pass.json`` runs each rule
(and ``base``) only on the tasks where the first pass saw it fire.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gaiamesh.evaluation.scoring import exact_match
from gaiamesh.mesh.frames import DocInit, chunk_document
from gaiamesh.tools.tool import ToolContext
from gaiamesh.models.backends.base import Completion, Scores, completion_request, score_request
from gaiamesh.models.backends.replay import request_key
from gaiamesh.models.llm import LLMClient, make_backend
from gaiamesh.orchestrated import dryrun, plan, planner, reading, workers
from gaiamesh.orchestrated.catalog import AnswerQuestion
from gaiamesh.pipeline import answer_type, extract, followup, hops, reason, split, text
from gaiamesh.pipeline import heuristics as ph
from gaiamesh.settings import load_settings
from gaiamesh.tasks import discover_tasks

# long-documents.jsonl is left out: 21 documents of 4,200 to 12,800 characters cost more model time
# than the 2-core machine had for this measurement.
PIPELINE_SETS = ["tasks", "tasks-dev/facts.jsonl#holdout", "tasks-dev/sealed-2026-11-26.jsonl#sealed-twofact-1"]
ORCHESTRATED_SETS = ["tasks-dev/sealed-2026-11-26.jsonl#sealed-arithmetic-1", "tasks-dev/real-world.jsonl",
                     "tasks-dev/arithmetic-paraphrases.jsonl"]  # fmt: skip
NEVER = re.compile(r"(?!x)x")  # a pattern that matches nothing


class Cached:
    """A backend answering from a request cache, and asking the model (then caching) on a miss."""

    def __init__(self, inner: Any, path: Path) -> None:
        self.inner, self.path, self.name, self.where = inner, path, inner.name, inner.where
        self.model = inner.model
        self.cache: dict[str, Any] = {}
        if path.exists():
            for line in path.read_text().splitlines():
                k, v = json.loads(line)
                self.cache[k] = v
        self.misses = 0

    def _put(self, key: str, value: Any) -> None:
        self.cache[key] = value
        self.misses += 1
        with self.path.open("a") as f:
            f.write(json.dumps([key, value]) + "\n")

    async def kind(self) -> Any:
        return "base"

    async def check(self) -> None:
        return None

    async def complete(self, ask: Any) -> Completion:
        key = request_key(completion_request(ask, self.model))
        if key not in self.cache:
            got = await self.inner.complete(ask)
            self._put(key, [got.text, got.prompt_tokens, got.eval_tokens])
        text_, p, e = self.cache[key]
        return Completion(text_, p, e)

    async def score(self, prompt: str, continuations: list[str]) -> Scores | None:
        key = request_key(score_request(prompt, continuations, self.model))
        if key not in self.cache:
            got = await self.inner.score(prompt, continuations)
            self._put(key, None if got is None else [got.logprobs, got.prompt_tokens, got.eval_tokens])
        v = self.cache[key]
        return None if v is None else Scores(v[0], v[1], v[2])

    async def aclose(self) -> None:
        await self.inner.aclose()


class StandIn:
    """A stand-in model for the first pass (where each rule fires): no model server, every
    request recorded, answers fixed by the request (a completion is empty, a score is drawn from
    the request's hash). A task whose requests and answer are the same with and without a rule,
    under this stand-in, is one where the rule changes nothing the model is asked."""

    name, where, model = "stand-in", "here", "stand-in"

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.misses = 0

    async def kind(self) -> Any:
        return "base"

    async def check(self) -> None:
        return None

    async def complete(self, ask: Any) -> Completion:
        self.asked.append(request_key(completion_request(ask, self.model)))
        return Completion("", 1, 1)

    async def score(self, prompt: str, continuations: list[str]) -> Scores | None:
        key = request_key(score_request(prompt, continuations, self.model))
        self.asked.append(key)
        return Scores([-(int(request_key({"text": key + c}), 16) % 1000) / 100 for c in continuations], 1, 1)

    async def aclose(self) -> None:
        return None


# --- the rules, each with how to switch it off -------------------------------------------------
def _set(pairs: list[tuple[Any, str, Any]]) -> Callable[[], None]:
    """Set each (module, name, value); returns the undo."""
    old = [(m, n, getattr(m, n)) for m, n, _ in pairs]
    for m, n, v in pairs:
        setattr(m, n, v)

    def undo() -> None:
        for m, n, v in old:
            setattr(m, n, v)

    return undo


def _digits_only(text_: str) -> int | float | None:
    found = re.search(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+", text_.replace("−", "-"))
    if not found:
        return None
    value = float(found.group(0).replace(",", ""))
    return int(value) if value.is_integer() else value


RULES: dict[str, Callable[[], Callable[[], None]]] = {
    # pipeline room
    "asked_kind": lambda: _set([(answer_type, "asked_kind", lambda q: "any")]),
    "person_noun": lambda: _set([(ph, "person_noun", lambda w: False), (hops, "person_noun", lambda w: False)]),
    "MONTH/DATE": lambda: _set([(answer_type, "DATE", NEVER), (answer_type, "MONTH", NEVER.pattern)]),
    "NUMBER_WORDS": lambda: _set([(answer_type, "NUMBER_WORDS", []), (answer_type, "QUANTITY", ph.quantity_pattern(()))]),
    "TITLES/SENTENCE_STARTERS": lambda: _set([(m, n, frozenset()) for m in (answer_type, followup)
                                              for n in ("TITLES", "SENTENCE_STARTERS")]),  # fmt: skip
    "BEFORE_COUNT": lambda: _set([(answer_type, "_BEFORE_COUNT", ph.STOPWORDS)]),
    "TRAILERS": lambda: _set([(answer_type, "_TRAILERS", ph.STOPWORDS)]),
    "POINTS_BACK": lambda: _set([(extract, "POINTS_BACK", NEVER), (hops, "POINTS_BACK", NEVER)]),
    "CLAUSE": lambda: _set([(extract, "CLAUSE", NEVER), (hops, "CLAUSE", NEVER)]),
    "DETERMINER": lambda: _set([(reason, "DETERMINER", NEVER), (followup, "DETERMINER", NEVER)]),
    "hop splitter": lambda: _set([(split, "decompose", lambda q: None)]),
    "PARAPHRASES": lambda: _set([(text, "_GROUPS", {})]),
    "ABBREVIATION": lambda: _set([(text, "ABBREVIATION", NEVER)]),
    # orchestrated room
    "split_subject": lambda: _set([(plan, "split_subject", lambda c: None)]),
    "PRONOUN_START": lambda: _set([(plan, "PRONOUN_START", NEVER)]),
    "ORDINAL/ELLIPSIS": lambda: _set([(plan, "ELLIPSIS", NEVER)]),
    "answer_scale": lambda: _set([(planner, "answer_scale", lambda q: 1)]),
    "unit_tail/drop_unit": lambda: _set([(plan, "unit_tail", lambda q: ""), (plan, "drop_unit", lambda s: s)]),
    "NUMBER_VALUES/SCALE_VALUES": lambda: _set([(m, "to_number", _digits_only) for m in (workers, reading)]),
}


def _without_template(name: str) -> Callable[[], Callable[[], None]]:
    def off() -> Callable[[], None]:
        real = dryrun.templates

        def fewer(folder: Any) -> Any:
            return [t for t in real(folder) if t.name != name]

        return _set([(dryrun, "templates", fewer)])

    return off


for _name in ("age_at_event", "difference", "duration", "percentage", "percentage_change", "ratio",
              "sum", "pdf_summary", "web"):  # fmt: skip
    RULES[f"template {_name}"] = _without_template(_name)


async def pipeline_answer(task: Any, settings: Any, llm: LLMClient) -> str:
    ctx = ToolContext(llm=llm, doc=DocInit(chunks=chunk_document(task.doc)), question=task.question,
                      workspace=Path(tempfile.gettempdir()), settings=settings, schemas=False)  # fmt: skip
    try:
        answer, _, _ = await workers.answer_question(ctx, AnswerQuestion(question=task.question))
    except (LookupError, ValueError) as exc:
        return f"<failed: {exc}>"
    return str(answer)


async def run_pass(
    sets: dict[str, list[Any]], kind: dict[str, str], settings: Any, llm: LLMClient, only: set[str] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for ref, tasks in sets.items():
        for task in tasks:
            if only is not None and f"{ref}/{task.task_id}" not in only:
                continue
            if kind[ref] == "pipeline":
                pred = await pipeline_answer(task, settings, llm)
            else:
                r = await dryrun.dry_run(task, settings, llm, False)
                pred = r.prediction if r.outcome == "answered" else f"<{r.outcome}>"
            asked = getattr(llm.backend, "asked", None)
            trace = request_key({"text": "|".join(asked)}) if asked is not None else ""
            if asked is not None:
                asked.clear()
            hit = exact_match(pred, list(task.golds)) if not pred.startswith("<") else 0
            out[f"{ref}/{task.task_id}"] = [pred, hit, trace]
    return out


async def main() -> None:
    cache_path, out_path, *only = sys.argv[1:]
    settings = load_settings()
    backend: Any = StandIn() if cache_path == "stand-in" else Cached(make_backend(settings), Path(cache_path))
    llm = LLMClient(backend, settings.llm_retry_for, "base")
    # SETS=orchestrated: the arithmetic sets only (a pipeline task costs ten times the model time)
    # SETS=long: the long documents too, for a rule that fires on few of them
    refs = ORCHESTRATED_SETS if os.environ.get("SETS") == "orchestrated" else ORCHESTRATED_SETS + PIPELINE_SETS
    if os.environ.get("SETS") == "long":
        refs = [*refs, "tasks-dev/long-documents.jsonl"]
    sets = {ref: discover_tasks(ref) for ref in refs}
    if cache_path == "stand-in":  # no model time: every held-out set, long documents too
        sets["tasks-dev/long-documents.jsonl"] = discover_tasks("tasks-dev/long-documents.jsonl")
    kind = {ref: "orchestrated" if ref in ORCHESTRATED_SETS else "pipeline" for ref in sets}
    results: dict[str, Any] = json.loads(Path(out_path).read_text()) if Path(out_path).exists() else {}
    # FIRED=stand-in.json: with the model, run each rule (and base) only on the tasks where the
    # stand-in pass saw it fire
    fired: dict[str, set[str]] | None = None
    if os.environ.get("FIRED"):
        first = json.loads(Path(os.environ["FIRED"]).read_text())
        base = first["base"]["answers"]
        fired = {rule: {k for k, v in r["answers"].items() if v[0] != base[k][0] or v[2] != base[k][2]}
                 for rule, r in first.items() if rule != "base" and (not only or rule in only)}  # fmt: skip
        fired["base"] = set().union(*fired.values())
    for rule in ["base", *(only or RULES)]:
        if rule in results:
            continue
        undo = RULES[rule]() if rule != "base" else (lambda: None)
        started, misses = time.monotonic(), backend.misses
        try:
            answers = await run_pass(sets, kind, settings, llm, None if fired is None else fired[rule])
        finally:
            undo()
        results[rule] = {"answers": answers, "seconds": round(time.monotonic() - started, 1),
                         "model_calls": backend.misses - misses}  # fmt: skip
        Path(out_path).write_text(json.dumps(results, indent=1))
        print(rule, results[rule]["seconds"], "s,", results[rule]["model_calls"], "new model calls", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
