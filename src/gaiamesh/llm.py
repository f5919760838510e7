"""The agents' LLM client: the official ``ollama.AsyncClient``, with token and time accounting."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import httpx
import ollama

if TYPE_CHECKING:
    from .settings import Settings

log = logging.getLogger("gaiamesh.llm")

# Back-off between attempts while the model server is down: doubling from the first, capped.
RETRY_FIRST_S = 0.25
RETRY_CAP_S = 2.0


class LLMError(RuntimeError):
    """The model server could not answer (unreachable, unknown model, bad request)."""


class ModelUnreachable(LLMError):
    """The model server stayed unreachable for the whole retry window (``LLM_RETRY_FOR``)."""


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

    @classmethod
    def from_settings(cls, settings: Settings) -> LLMClient:
        """The client every agent and the baseline use, configured from ``settings``."""
        return cls(
            settings.ollama_host, settings.model, settings.llm_temperature, settings.llm_seed,
            settings.llm_timeout, settings.llm_retry_for,
        )  # fmt: skip

    async def complete(
        self, prompt: str, usage: LLMUsage, num_predict: int = 24, stop: tuple[str, ...] = ("\n",)
    ) -> str:
        """One non-streaming ``/api/generate`` call in raw mode; adds the model's counts to ``usage``.

        While the model server is unreachable (killed, restarting) the call is retried with
        back-off for up to ``retry_for`` seconds; then :class:`ModelUnreachable` says so. Other
        failures raise :class:`LLMError` at once."""
        first_failure: float | None = None
        delay = RETRY_FIRST_S
        while True:
            started = time.perf_counter()
            try:
                resp = await self._client.generate(
                    model=self.model,
                    prompt=prompt,
                    raw=True,
                    stream=False,
                    options={**self.options, "num_predict": num_predict, "stop": list(stop)},
                )
                break
            except (ollama.ResponseError, ConnectionError, httpx.HTTPError) as exc:
                if not _unreachable(exc):
                    if isinstance(exc, ollama.ResponseError):
                        raise LLMError(f"model server at {self.host} refused the request: {exc}") from exc
                    raise LLMError(f"model server at {self.host} failed: {exc!r}") from exc
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
        elapsed = (time.perf_counter() - started) * 1000
        usage.calls += 1
        usage.prompt_tokens += resp.prompt_eval_count or 0
        usage.eval_tokens += resp.eval_count or 0
        usage.llm_ms += elapsed
        usage.log.append(
            {"prompt_tokens": resp.prompt_eval_count, "eval_tokens": resp.eval_count, "ms": round(elapsed, 1)}
        )
        return resp.response or ""
