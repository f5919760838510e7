"""The agents' model client: one backend (Ollama's native API or an OpenAI-compatible server),
the model's kind decided once, retries while the server is unreachable, and token and time
accounting from the server's own counts."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from ..errors import ConfigError, ModelError, ModelUnreachable
from .backends.base import Ask, Backend, ModelKind, completion_request, score_request
from .backends.ollama import OllamaBackend
from .prompts import Prompt

if TYPE_CHECKING:
    from ..settings import ModelSettings

log = logging.getLogger("gaiamesh.models.llm")
T = TypeVar("T")

# Back-off between attempts while the model server is down: doubling from the first, capped.
RETRY_FIRST_S = 0.25
RETRY_CAP_S = 2.0

__all__ = ["AnswerChoice", "LLMClient", "LLMUsage", "ModelError", "ModelUnreachable", "Profile", "ScoringCost"]
PROBE_SCHEMA: dict[str, Any] = {"type": "object"}  # the smallest schema: is one taken at all?
# The scoring probe (ANSWER_CHOICE=auto): a short continuation scored, timed. Its time per
# token, scaled to a passage of PASSAGE_TOKENS, is what one scored passage costs on the backend
# at most: llama-cpp-python's server pays per echoed token (it sorts the vocabulary for each).
# A probe over budget is repeated, up to PROBE_REPEATS, and the least time kept: a busy machine
# stalls a call now and then, a slow server every time. A backend that scores in one pass over
# the text by construction (our /api/score: the work of reading a prompt) is probed once, for
# the record, and not judged by a time that would only measure the machine's load.
PROBE_PROMPT, PROBE_CONTINUATION = "The sky is", " blue"
PASSAGE_TOKENS = 64  # the median scored call of a bundled task's run (docs/results/2026-11-27-own-server.md)
PROBE_REPEATS = 3


@dataclass
class LLMUsage:
    """Counts the model server itself reports (prompt and generated tokens) and wall time.
    ``uncounted`` is the number of calls whose server gave no counts."""

    calls: int = 0
    prompt_tokens: int = 0
    eval_tokens: int = 0
    llm_ms: float = 0.0
    uncounted: int = 0
    log: list[dict[str, object]] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.eval_tokens

    @property
    def reported(self) -> int | None:
        """The tokens to report: None when a call's server gave no counts (unknown, not 0)."""
        return None if self.uncounted else self.tokens

    def count(
        self, started: float, prompt_tokens: int | None, eval_tokens: int | None, ms: float | None = None,
        call: dict[str, Any] | None = None,
    ) -> None:  # fmt: skip
        """Adds one call: its counts, its time (``ms`` where the backend gives it, else measured
        from ``started``) and, in the log, the request and answer (``call``) a replay reads."""
        elapsed = (time.perf_counter() - started) * 1000 if ms is None else ms
        self.calls += 1
        self.prompt_tokens += prompt_tokens or 0
        self.eval_tokens += eval_tokens or 0
        self.uncounted += prompt_tokens is None and eval_tokens is None
        self.llm_ms += elapsed
        # the time unrounded: a replay adds the same numbers in the same order, so the llm_ms its
        # frames carry are the recorded run's to the last digit
        self.log.append({"prompt_tokens": prompt_tokens, "eval_tokens": eval_tokens, "ms": elapsed, **(call or {})})


@dataclass(frozen=True)
class Profile:
    """What the agents' model is, as found at start-up: recorded in ``metrics.json``."""

    backend: str
    model: str
    kind: ModelKind
    scores: bool | None  # None: not asked (no configuration needs to know)
    schemas: bool | None = None


@dataclass(frozen=True)
class ScoringCost:
    """The scoring probe: its least time over ``probes`` calls (ms, as the agent saw it) and
    the tokens the server counted for it."""

    probe_ms: float
    tokens: int
    probes: int = 1
    # timed: judged by its time; native: the backend scores in one pass by construction;
    # recorded: a replay's (the recorded runs scored, and it answers from them)
    how: Literal["timed", "native", "recorded"] = "timed"

    @property
    def passage_ms(self) -> float:
        """What one scored passage of :data:`PASSAGE_TOKENS` costs at the probe's rate per token
        (at most: a fixed cost per call is counted as if it grew with the text)."""
        return round(self.probe_ms * PASSAGE_TOKENS / max(1, self.tokens), 1)


@dataclass(frozen=True)
class AnswerChoice:
    """How an agent that scores chooses among candidates (``likelihood`` or ``weights``), and
    why: what ANSWER_CHOICE asked and what a scored passage was measured to cost (None: not
    measured). Announced at the handshake and recorded in ``metrics.json``."""

    choice: Literal["likelihood", "weights"]
    passage_ms: float | None
    why: str


def decide_answer_choice(
    asked: Literal["auto", "likelihood", "weights"], cost: ScoringCost | None, budget_ms: float, server: str
) -> AnswerChoice:
    """The choice ANSWER_CHOICE ``asked`` for makes on a backend whose scoring probe found
    ``cost`` (None: the backend cannot score). ``auto`` takes likelihood only where a scored
    passage fits in ``budget_ms`` (SCORE_BUDGET_MS). ``likelihood`` on a backend that cannot
    score is the caller's error to raise."""
    if asked == "weights":
        return AnswerChoice("weights", None, "ANSWER_CHOICE=weights")
    if cost is None:
        return AnswerChoice("weights", None, f"ANSWER_CHOICE={asked}: the {server} gives no log-probabilities of a continuation")
    if cost.how == "recorded":
        return AnswerChoice("likelihood", None, f"ANSWER_CHOICE={asked}: the recorded runs scored continuations")
    took = (
        f"a scored passage of {PASSAGE_TOKENS} tokens takes about {cost.passage_ms:,.0f} ms on the {server} "
        f"(a probe of {cost.tokens} tokens took {cost.probe_ms:,.0f} ms)"
    )
    if cost.how == "native":
        return AnswerChoice("likelihood", cost.passage_ms, f"ANSWER_CHOICE={asked}: the {server} scores a "
                            f"continuation in one pass over the text, as it reads a prompt; {took}")  # fmt: skip
    if asked == "likelihood":
        return AnswerChoice("likelihood", cost.passage_ms, f"ANSWER_CHOICE=likelihood; {took}")
    if cost.passage_ms > budget_ms:
        return AnswerChoice("weights", cost.passage_ms, f"ANSWER_CHOICE=auto: {took}, over SCORE_BUDGET_MS={budget_ms:g}")
    return AnswerChoice("likelihood", cost.passage_ms, f"ANSWER_CHOICE=auto: {took}, within SCORE_BUDGET_MS={budget_ms:g}")


def make_backend(settings: ModelSettings, tool: str | None = None) -> Backend:
    """The backend ``settings`` name; ``tool`` is the asking agent's (a replay answers it with
    its own tool's records first)."""
    options: dict[str, Any] = {"temperature": settings.llm_temperature, "seed": settings.llm_seed}
    if settings.llm_backend == "replay":
        from .backends.replay import ReplayBackend

        if settings.replay_from is None:
            raise ConfigError("LLM_BACKEND=replay needs REPLAY_FROM: a folder of earlier runs (their run_artifacts.tar.gz)")
        return ReplayBackend(settings.replay_from, settings.model, paced=settings.replay_pace == "recorded", tool=tool)
    if settings.llm_backend == "openai":
        from .backends.openai_compat import OpenAIBackend  # the openai client only where it is used

        if not settings.openai_base_url:
            raise ConfigError("LLM_BACKEND=openai needs OPENAI_BASE_URL (e.g. http://127.0.0.1:8000/v1)")
        return OpenAIBackend(settings.openai_base_url, settings.openai_api_key, settings.model, options,
                             settings.llm_timeout)  # fmt: skip
    return OllamaBackend(settings.ollama_host, settings.model, options, settings.llm_timeout)


class LLMClient:
    """Completions and scores from one backend, in the form the model takes."""

    def __init__(self, backend: Backend, retry_for: float = 0.0, kind: Literal["auto", "base", "chat"] = "auto") -> None:
        self.backend = backend
        self.retry_for = retry_for
        self._kind: ModelKind | None = None if kind == "auto" else kind

    @classmethod
    def ollama(cls, host: str, model: str, timeout: float = 120.0, retry_for: float = 0.0) -> LLMClient:
        """A client of an Ollama-API server with the default sampling (tests, tools)."""
        return cls(OllamaBackend(host, model, {"temperature": 0.0, "seed": 42}, timeout), retry_for)

    @classmethod
    def from_settings(cls, settings: ModelSettings, tool: str | None = None) -> LLMClient:
        """The client every agent and the baseline use, configured from ``settings``."""
        return cls(make_backend(settings, tool), settings.llm_retry_for, settings.model_kind)

    @property
    def host(self) -> str:
        return self.backend.where

    @property
    def model(self) -> str:
        return str(getattr(self.backend, "model", ""))

    async def _retrying(self, call: Callable[[], Awaitable[T]]) -> T:
        """``call()``, retried with back-off for up to ``retry_for`` seconds while the model
        server is unreachable (killed, restarting); then :class:`ModelUnreachable` says so.
        Other failures raise :class:`ModelError` at once."""
        first_failure: float | None = None
        delay = RETRY_FIRST_S
        while True:
            try:
                return await call()
            except ModelUnreachable as exc:
                now = time.monotonic()
                first_failure = now if first_failure is None else first_failure
                if now - first_failure >= self.retry_for:
                    raise ModelUnreachable(
                        f"{exc} (retried for {now - first_failure:.1f} s, LLM_RETRY_FOR={self.retry_for:g})"
                    ) from exc
                log.warning("%s; retrying in %.2f s", exc, delay)
                await asyncio.sleep(delay)  # back-off while the server restarts, not a synchronization
                delay = min(delay * 2, RETRY_CAP_S)

    async def kind(self) -> ModelKind:
        """The model's kind: configured (MODEL_KIND), or asked of the server once."""
        if self._kind is None:
            found: ModelKind = await self._retrying(self.backend.kind)
            self._kind = found
            return found
        return self._kind

    async def profile(self, need_scores: bool = False, need_schemas: bool = False) -> Profile:
        """Check the backend before any run: it answers and serves the model; where the
        configuration needs them, whether it can score continuations and hold output to a JSON
        schema (a small probe of each). Raises ModelError when the server cannot be used."""
        await self._retrying(self.backend.check)
        kind = await self.kind()
        scores = schemas = None
        known = getattr(self.backend, "abilities", None)  # a replay says what its records hold
        if need_scores:
            scores = known.scores if known else await self._retrying(lambda: self.backend.score("The sky is", [" blue"])) is not None
        if need_schemas:
            schemas = await self.holds_schemas()
        return Profile(self.backend.name, self.model, kind, scores, schemas)

    async def scoring_cost(self, budget_ms: float) -> ScoringCost | None:
        """The scoring probe (see :data:`PROBE_PROMPT`): None when the backend cannot score.
        Its calls are retried while the server is unreachable, like any call. A replay answers
        from its records: scores where they hold some, at no cost."""
        known = getattr(self.backend, "abilities", None)
        if known is not None:
            return ScoringCost(0.0, 1, how="recorded") if known.scores else None
        native = bool(getattr(self.backend, "scores_in_one_pass", False))
        best: ScoringCost | None = None
        for made in range(1, 2 if native else PROBE_REPEATS + 1):
            usage = LLMUsage()
            if await self.score(PROBE_PROMPT, [PROBE_CONTINUATION], usage) is None:
                return None
            if best is None or usage.llm_ms < best.probe_ms:
                tokens = usage.tokens or len(f"{PROBE_PROMPT}{PROBE_CONTINUATION}".split())
                best = ScoringCost(round(usage.llm_ms, 1), tokens, how="native" if native else "timed")
            best = replace(best, probes=made)
            if best.passage_ms <= budget_ms:
                break
        return best

    async def holds_schemas(self) -> bool:
        """Whether the backend holds this model's output to a JSON schema (a small probe)."""
        known = getattr(self.backend, "abilities", None)
        if known is not None:
            return bool(known.schemas)
        try:
            await self.complete("Reply with a JSON object: ", LLMUsage(), num_predict=8, stop=(), schema=PROBE_SCHEMA)
        except ModelUnreachable:
            raise
        except ModelError:
            return False
        return True

    async def complete(
        self, prompt: Prompt | str, usage: LLMUsage, num_predict: int = 24, stop: tuple[str, ...] = ("\n",),
        schema: dict[str, Any] | None = None,
    ) -> str:  # fmt: skip
        """One completion in the model's form; adds the server's counts to ``usage``. Retried
        while the server is unreachable (see :meth:`_retrying`)."""
        ask = Ask(prompt if isinstance(prompt, Prompt) else Prompt.plain(prompt), await self.kind(), num_predict, stop, schema)
        started = time.perf_counter()

        async def call() -> Any:
            nonlocal started
            started = time.perf_counter()
            return await self.backend.complete(ask)

        done = await self._retrying(call)
        asked = completion_request(ask, self.model)
        usage.count(started, done.prompt_tokens, done.eval_tokens, done.ms, asked | {"answer": done.text})
        return str(done.text)

    async def score(self, prompt: Prompt | str, continuations: list[str], usage: LLMUsage) -> list[float] | None:
        """The model's log-probability of each continuation right after the prompt's text form.
        None when the server cannot score: callers then weigh candidates without it."""
        if not continuations:
            return None
        text = prompt.text if isinstance(prompt, Prompt) else prompt
        started = time.perf_counter()

        async def call() -> Any:
            nonlocal started
            started = time.perf_counter()
            return await self.backend.score(text, continuations)

        got = await self._retrying(call)
        if got is None:
            return None
        asked = score_request(text, continuations, self.model)
        usage.count(started, got.prompt_tokens, got.eval_tokens, got.ms, asked | {"logprobs": list(got.logprobs)})
        return list(got.logprobs)
