"""The agents' LLM client: the official ``ollama.AsyncClient``, with token and time accounting."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import httpx
import ollama


class LLMError(RuntimeError):
    """The model server could not answer (unreachable, unknown model, bad request)."""


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
        self, host: str, model: str, temperature: float = 0.0, seed: int = 42, timeout: float = 120.0
    ):
        self.host = host
        self.model = model
        self.options = {"temperature": temperature, "seed": seed}
        self._client = ollama.AsyncClient(host=host, timeout=timeout)

    async def complete(
        self, prompt: str, usage: LLMUsage, num_predict: int = 24, stop: tuple[str, ...] = ("\n",)
    ) -> str:
        """One non-streaming ``/api/generate`` call in raw mode; adds the model's counts to ``usage``."""
        started = time.perf_counter()
        try:
            resp = await self._client.generate(
                model=self.model,
                prompt=prompt,
                raw=True,
                stream=False,
                options={**self.options, "num_predict": num_predict, "stop": list(stop)},
            )
        except ollama.ResponseError as exc:
            raise LLMError(f"model server at {self.host} refused the request: {exc}") from exc
        except (ConnectionError, httpx.ConnectError, httpx.ConnectTimeout) as exc:
            # the ollama client turns connection failures into the builtin ConnectionError
            raise LLMError(f"model server unreachable at {self.host}: {exc}") from exc
        except httpx.HTTPError as exc:
            raise LLMError(f"model server at {self.host} failed: {exc!r}") from exc
        elapsed = (time.perf_counter() - started) * 1000
        usage.calls += 1
        usage.prompt_tokens += resp.prompt_eval_count or 0
        usage.eval_tokens += resp.eval_count or 0
        usage.llm_ms += elapsed
        usage.log.append(
            {"prompt_tokens": resp.prompt_eval_count, "eval_tokens": resp.eval_count, "ms": round(elapsed, 1)}
        )
        return resp.response or ""
