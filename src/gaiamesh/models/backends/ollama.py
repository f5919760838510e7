"""Ollama's native API through the official ``ollama`` client: ``/api/generate`` in raw mode for
base models, ``/api/chat`` for models with a chat template (the model's own template formats
the messages), ``format`` for JSON schemas, and ``/api/score`` where the server has it (ours)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx
import ollama

from ...errors import ModelError, ModelUnreachable
from ..types import ScoreRequest, ScoreResponse, ServerError
from .base import Ask, Completion, ModelKind, Scores

T = TypeVar("T")
RAW_TEMPLATES = ("", "{{ .Prompt }}")  # a template that only hands the prompt on: a base model


def _unreachable(exc: BaseException) -> bool:
    """A failure that a restarted model server cures: refused or dropped connections, a reply
    cut off mid-way, or a gateway answering for a server that is not there yet."""
    if isinstance(exc, ollama.ResponseError):
        return exc.status_code in (502, 503, 504)
    return isinstance(exc, (ConnectionError, httpx.TransportError)) and not isinstance(exc, httpx.ReadTimeout)


class OllamaBackend:
    name = "ollama"
    # /api/score (ours) reads prompt and continuations in one forward pass, the work of reading a
    # prompt for a completion: ANSWER_CHOICE=auto does not judge it by a probe's time
    scores_in_one_pass = True

    def __init__(self, host: str, model: str, options: dict[str, Any], timeout: float) -> None:
        self.where = host
        self.model = model
        self.options = options
        self._client = ollama.AsyncClient(host=host, timeout=timeout)
        self._http = httpx.AsyncClient(base_url=host, timeout=timeout)  # /api/score: not in the ollama client
        self._scores_unavailable = False

    async def _call(self, call: Callable[[], Awaitable[T]]) -> T:
        try:
            return await call()
        except (ollama.ResponseError, ConnectionError, httpx.HTTPError) as exc:
            if _unreachable(exc):
                # the ollama client turns connection failures into the builtin ConnectionError
                raise ModelUnreachable(f"model server unreachable at {self.where}: {exc}") from exc
            if isinstance(exc, ollama.ResponseError):
                raise ModelError(f"model server at {self.where} refused the request: {exc}") from exc
            raise ModelError(f"model server at {self.where} failed: {exc!r}") from exc

    async def kind(self) -> ModelKind:
        shown = await self._call(lambda: self._client.show(self.model))
        return kind_of(shown.template)

    async def check(self) -> None:
        listed = await self._call(self._client.list)
        names = {m.model for m in listed.models}
        if self.model not in names and f"{self.model}:latest" not in names:
            raise ModelError(
                f"the Ollama server at {self.where} does not serve MODEL={self.model!r} "
                f"(it has: {', '.join(sorted(n for n in names if n)) or 'none'})"
            )

    async def complete(self, ask: Ask) -> Completion:
        options = {**self.options, "num_predict": ask.num_predict, "stop": list(ask.stop)}
        if ask.kind == "base":
            gen = await self._call(lambda: self._client.generate(
                model=self.model, prompt=ask.prompt.text, raw=True, stream=False, options=options, format=ask.schema,
            ))  # fmt: skip
            return Completion(gen.response or "", gen.prompt_eval_count, gen.eval_count)
        messages = [m for m in ask.prompt.messages() if m["content"]]
        chat = await self._call(lambda: self._client.chat(
            model=self.model, messages=messages, stream=False, options=options, format=ask.schema,
        ))  # fmt: skip
        return Completion(chat.message.content or "", chat.prompt_eval_count, chat.eval_count)

    async def score(self, prompt: str, continuations: list[str]) -> Scores | None:
        """``/api/score`` (ours; see ``modelserver/app.py``). None when the server does not
        offer it (an official Ollama): it is not asked again."""
        if self._scores_unavailable:
            return None

        async def call() -> httpx.Response:
            request = ScoreRequest(model=self.model, prompt=prompt, continuations=continuations)
            resp = await self._http.post("/api/score", json=request.model_dump())
            if resp.status_code >= 500:
                raise ollama.ResponseError(resp.text, resp.status_code)
            return resp

        resp = await self._call(call)
        if resp.status_code != 200:
            if resp.status_code in (404, 405) and not _server_error(resp):  # the route is missing, not the model
                self._scores_unavailable = True
                return None
            raise ModelError(f"model server at {self.where} refused a scoring request: {resp.status_code} {resp.text}")
        body = ScoreResponse.model_validate_json(resp.content)
        return Scores([s.logprob for s in body.scores], body.prompt_eval_count, body.eval_count)

    async def aclose(self) -> None:
        await self._http.aclose()


def kind_of(template: str | None) -> ModelKind:
    """A model whose template only hands the prompt on takes raw text; any other, messages."""
    return "base" if (template or "").strip() in RAW_TEMPLATES else "chat"


def _server_error(resp: httpx.Response) -> bool:
    """Whether ``resp`` is an Ollama-style error body: a server that has the route refused the
    request. Decided by the body's shape, not its words."""
    try:
        ServerError.model_validate_json(resp.content)
    except ValueError:
        return False
    return True
