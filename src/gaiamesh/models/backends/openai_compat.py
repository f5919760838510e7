"""An OpenAI-compatible server (vLLM, llama.cpp's server, llama-cpp-python's, LM Studio, a
hosted API) through the official ``openai`` client: ``/v1/chat/completions`` for chat models,
``/v1/completions`` for base models, ``response_format`` for JSON schemas, and continuations
scored as lm-evaluation-harness scores them: prompt and continuation sent together with
``echo`` and ``logprobs``, the continuation's ``token_logprobs`` summed."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import openai

from ...errors import ModelError, ModelUnreachable
from .base import Ask, Completion, ModelKind, Scores

T = TypeVar("T")
# Two ways servers take a schema: OpenAI's own, and the older ``json_object`` with a schema
# beside it (llama-cpp-python's server). The first one a server accepts is kept.
SCHEMA_FORMS = ("json_schema", "json_object")


class OpenAIBackend:
    name = "openai"
    # an echo's prompt log-probabilities cost what the server makes of them (llama-cpp-python's:
    # a sort of the vocabulary per token): ANSWER_CHOICE=auto times a probe
    scores_in_one_pass = False

    def __init__(self, base_url: str, api_key: str, model: str, options: dict[str, Any], timeout: float) -> None:
        self.where = base_url
        self.model = model
        self.options = options
        # The key goes to the client alone: never into a message, a log or metrics.json.
        self._client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key or "none", timeout=timeout, max_retries=0)
        self._schema_forms = list(SCHEMA_FORMS)
        self._scores_unavailable = False

    async def _call(self, call: Callable[[], Awaitable[T]]) -> T:
        try:
            return await call()
        except openai.OpenAIError as exc:
            raise self._translate(exc) from exc

    def _translate(self, exc: openai.OpenAIError) -> ModelError:
        """The client's error as ours: a transport failure a restarted server cures is
        ModelUnreachable (a timeout is not: the server is there and slow)."""
        if isinstance(exc, openai.APITimeoutError):
            return ModelError(f"OpenAI-compatible server at {self.where} timed out")
        if isinstance(exc, (openai.APIConnectionError, openai.InternalServerError)):
            return ModelUnreachable(f"OpenAI-compatible server unreachable at {self.where}: {exc}")
        if isinstance(exc, openai.APIStatusError):
            return ModelError(f"OpenAI-compatible server at {self.where} refused the request: {exc.status_code} {exc.message}")
        return ModelError(f"OpenAI-compatible server at {self.where} failed: {exc!r}")

    async def kind(self) -> ModelKind:
        # The API does not say; servers of this kind are mostly run for chat models. A base
        # model is named in configuration (MODEL_KIND=base).
        return "chat"

    async def check(self) -> None:
        listed = await self._call(self._client.models.list)
        names = {m.id for m in listed.data}
        if names and self.model not in names:
            raise ModelError(
                f"the OpenAI-compatible server at {self.where} does not serve MODEL={self.model!r} "
                f"(it has: {', '.join(sorted(names))})"
            )

    def _sampling(self, ask: Ask) -> dict[str, Any]:
        return {"model": self.model, "max_tokens": ask.num_predict, "stop": list(ask.stop) or None,
                "temperature": self.options["temperature"], "seed": self.options["seed"]}  # fmt: skip

    async def complete(self, ask: Ask) -> Completion:
        if ask.kind == "base":
            if ask.schema is not None:
                raise ModelError("a JSON schema needs a chat model on an OpenAI-compatible server (MODEL_KIND=chat)")
            done = await self._call(lambda: self._client.completions.create(prompt=ask.prompt.text, **self._sampling(ask)))
            usage = done.usage
            return Completion(done.choices[0].text, usage and usage.prompt_tokens, usage and usage.completion_tokens)
        messages: Any = [m for m in ask.prompt.messages() if m["content"]]
        if ask.schema is None:
            chat = await self._call(lambda: self._client.chat.completions.create(messages=messages, **self._sampling(ask)))
        else:
            chat = await self._with_schema(messages, ask)
        usage = chat.usage
        return Completion(chat.choices[0].message.content or "", usage and usage.prompt_tokens,
                          usage and usage.completion_tokens)  # fmt: skip

    async def _with_schema(self, messages: Any, ask: Ask) -> Any:
        """The first schema form the server accepts; one it refuses (400, 422, or a 500 from a
        server that fails on what it does not know) is not sent again."""
        assert ask.schema is not None
        while True:
            fmt: Any = ({"type": "json_schema", "json_schema": {"name": "answer", "schema": ask.schema}}
                        if self._schema_forms[0] == "json_schema" else {"type": "json_object", "schema": ask.schema})  # fmt: skip
            try:
                return await self._client.chat.completions.create(
                    messages=messages, response_format=fmt, **self._sampling(ask)
                )
            # llama-cpp-python's server answers a form it does not know with a 500, not a 400
            except (openai.BadRequestError, openai.UnprocessableEntityError, openai.InternalServerError) as exc:
                if len(self._schema_forms) == 1:
                    raise ModelError(f"OpenAI-compatible server at {self.where} takes no JSON schema: {exc.message}") from exc
                self._schema_forms.pop(0)
            except openai.OpenAIError as exc:
                raise self._translate(exc) from exc

    async def score(self, prompt: str, continuations: list[str]) -> Scores | None:
        """Each continuation's log-probability after ``prompt``; None where the server gives no
        prompt log-probabilities (then it is not asked again)."""
        if self._scores_unavailable:
            return None
        logprobs: list[float] = []
        prompt_tokens = eval_tokens = 0
        for continuation in continuations:
            got = await self._echo(prompt, continuation)
            if got is None:
                self._scores_unavailable = True
                return None
            logprobs.append(got[0])
            prompt_tokens, eval_tokens = prompt_tokens + got[1], eval_tokens + got[2]
        return Scores(logprobs, prompt_tokens, eval_tokens)

    async def _echo(self, prompt: str, continuation: str) -> tuple[float, int, int] | None:
        try:
            done = await self._call(lambda: self._client.completions.create(
                model=self.model, prompt=prompt + continuation, max_tokens=1, echo=True, logprobs=1, temperature=0.0,
            ))  # fmt: skip
        except ModelError as exc:
            if isinstance(exc, ModelUnreachable):
                raise
            return None  # the server has no completions with echo
        lp = done.choices[0].logprobs
        if lp is None or not lp.token_logprobs or not lp.text_offset:
            return None
        logprob = continuation_logprob(len(prompt), len(continuation), lp.text_offset, lp.token_logprobs)
        if logprob is None:
            return None
        usage = done.usage
        return logprob, (usage.prompt_tokens if usage else 0), (usage.completion_tokens if usage else 0)

    async def aclose(self) -> None:
        await self._client.close()


def continuation_logprob(
    prompt_chars: int, continuation_chars: int, offsets: Sequence[int], logprobs: Sequence[float | None]
) -> float | None:
    """The summed log-probability of the tokens that begin inside the continuation, from an
    echoed completion's ``text_offset`` and ``token_logprobs`` (the one generated token begins
    at its end and is left out). None when no token begins inside it."""
    end = prompt_chars + continuation_chars
    picked = [v for at, v in zip(offsets, logprobs, strict=False) if prompt_chars <= at < end and v is not None]
    return sum(picked) if picked else None
