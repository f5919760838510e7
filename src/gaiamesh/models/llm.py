"""The agents' LLM client: the official ``ollama.AsyncClient``, with token and time accounting."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import httpx
import ollama

from ..errors import ModelError, ModelUnreachable
from .types import ScoreRequest, ScoreResponse, ServerError

if TYPE_CHECKING:
    from ..settings import ModelSettings

log = logging.getLogger("gaiamesh.models.llm")
T = TypeVar("T")

# Back-off between attempts while the model server is down: doubling from the first, capped.
RETRY_FIRST_S = 0.25
RETRY_CAP_S = 2.0


def _unreachable(exc: BaseException) -> bool:
    """A failure that a restarted model server cures: refused or dropped connections, a reply
    cut off mid-way, or a gateway answering for a server that is not there yet."""
    if isinstance(exc, ollama.ResponseError):
        return exc.status_code in (502, 503, 504)
    return isinstance(exc, (ConnectionError, httpx.TransportError)) and not isinstance(exc, httpx.ReadTimeout)


@dataclass
class LLMUsage:
    """Counts the model itself reports (``prompt_eval_count`` + ``eval_count``) and wall time."""

    calls: int = 0
    prompt_tokens: int = 0
    eval_tokens: int = 0
    llm_ms: float = 0.0
    log: list[dict[str, object]] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.eval_tokens


class LLMClient:
    """Raw completions from a base model (Gemma 3 270M has no chat template)."""

    def __init__(
        self, host: str, model: str, temperature: float = 0.0, seed: int = 42, timeout: float = 120.0,
        retry_for: float = 0.0,
    ):  # fmt: skip
        self.host = host
        self.model = model
        self.options = {"temperature": temperature, "seed": seed}
        self.retry_for = retry_for
        self._client = ollama.AsyncClient(host=host, timeout=timeout)
        self._http = httpx.AsyncClient(base_url=host, timeout=timeout)  # /api/score: not in the ollama client
        self._scores_unavailable = False

    @classmethod
    def from_settings(cls, settings: ModelSettings) -> LLMClient:
        """The client every agent and the baseline use, configured from ``settings``."""
        return cls(
            settings.ollama_host, settings.model, settings.llm_temperature, settings.llm_seed,
            settings.llm_timeout, settings.llm_retry_for,
        )  # fmt: skip

    async def _retrying(self, call: Callable[[], Awaitable[T]]) -> T:
        """``call()``, retried with back-off for up to ``retry_for`` seconds while the model
        server is unreachable (killed, restarting); then :class:`ModelUnreachable` says so.
        Other failures raise :class:`ModelError` at once."""
        first_failure: float | None = None
        delay = RETRY_FIRST_S
        while True:
            try:
                return await call()
            except (ollama.ResponseError, ConnectionError, httpx.HTTPError) as exc:
                if not _unreachable(exc):
                    if isinstance(exc, ollama.ResponseError):
                        raise ModelError(f"model server at {self.host} refused the request: {exc}") from exc
                    raise ModelError(f"model server at {self.host} failed: {exc!r}") from exc
                now = time.monotonic()
                first_failure = now if first_failure is None else first_failure
                if now - first_failure >= self.retry_for:
                    # the ollama client turns connection failures into the builtin ConnectionError
                    raise ModelUnreachable(
                        f"model server unreachable at {self.host} (retried for {now - first_failure:.1f} s, "
                        f"LLM_RETRY_FOR={self.retry_for:g}): {exc}"
                    ) from exc
                log.warning("model server unreachable at %s (%s); retrying in %.2f s", self.host, exc, delay)
                await asyncio.sleep(delay)  # back-off while the server restarts, not a synchronization
                delay = min(delay * 2, RETRY_CAP_S)

    @staticmethod
    def _count(usage: LLMUsage, started: float, prompt_tokens: int, eval_tokens: int) -> None:
        elapsed = (time.perf_counter() - started) * 1000
        usage.calls += 1
        usage.prompt_tokens += prompt_tokens
        usage.eval_tokens += eval_tokens
        usage.llm_ms += elapsed
        usage.log.append({"prompt_tokens": prompt_tokens, "eval_tokens": eval_tokens, "ms": round(elapsed, 1)})

    async def complete(
        self, prompt: str, usage: LLMUsage, num_predict: int = 24, stop: tuple[str, ...] = ("\n",)
    ) -> str:
        """One non-streaming ``/api/generate`` call in raw mode; adds the model's counts to ``usage``.

        Retried while the model server is unreachable (see :meth:`_retrying`)."""
        started = time.perf_counter()

        async def call() -> ollama.GenerateResponse:
            nonlocal started
            started = time.perf_counter()
            return await self._client.generate(
                model=self.model,
                prompt=prompt,
                raw=True,
                stream=False,
                options={**self.options, "num_predict": num_predict, "stop": list(stop)},
            )

        resp = await self._retrying(call)
        self._count(usage, started, resp.prompt_eval_count or 0, resp.eval_count or 0)
        return resp.response or ""

    async def score(self, prompt: str, continuations: list[str], usage: LLMUsage) -> list[float] | None:
        """The model's log-probability of each continuation right after ``prompt``, from the
        model server's ``/api/score`` (ours; see ``modelserver/app.py``). None when the server
        does not offer it (an official Ollama): callers then weigh candidates without it."""
        if not continuations or self._scores_unavailable:
            return None
        started = time.perf_counter()

        async def call() -> httpx.Response:
            nonlocal started
            started = time.perf_counter()
            request = ScoreRequest(model=self.model, prompt=prompt, continuations=continuations)
            resp = await self._http.post("/api/score", json=request.model_dump())
            if resp.status_code >= 500:
                raise ollama.ResponseError(resp.text, resp.status_code)
            return resp

        resp = await self._retrying(call)
        if resp.status_code != 200:
            if resp.status_code in (404, 405) and not _server_error(resp):  # the route is missing, not the model
                self._scores_unavailable = True
                return None
            raise ModelError(f"model server at {self.host} refused a scoring request: {resp.status_code} {resp.text}")
        body = ScoreResponse.model_validate_json(resp.content)
        self._count(usage, started, body.prompt_eval_count, body.eval_count)
        return [s.logprob for s in body.scores]


def _server_error(resp: httpx.Response) -> bool:
    """Whether ``resp`` is an Ollama-style error body: a server that has the route refused the
    request. Decided by the body's shape, not its words."""
    try:
        ServerError.model_validate_json(resp.content)
    except ValueError:
        return False
    return True
