"""The agents' model client (Ollama backend) at the ``/api/score`` edge, over httpx's mock transport (one layer;
the real server and model answer the same route in tests/model): the typed body is read, and a
server without the route is told from one that refused the request by the body's shape."""

from __future__ import annotations

import httpx
import pytest

from gaiamesh.errors import ModelError
from gaiamesh.models.backends.ollama import OllamaBackend
from gaiamesh.models.llm import LLMClient, LLMUsage
from gaiamesh.models.types import ScoreRequest


def client(handler: httpx.MockTransport) -> LLMClient:
    backend = OllamaBackend("http://model.invalid", "gemma3:270m", {"temperature": 0.0, "seed": 42}, 5.0)
    backend._http = httpx.AsyncClient(base_url="http://model.invalid", transport=handler)
    return LLMClient(backend)


async def test_scores_are_read_from_the_typed_body_and_counted() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        asked = ScoreRequest.model_validate_json(request.content)
        scores = [{"continuation": c, "logprob": -1.5 * (i + 1), "token_logprobs": [-1.5 * (i + 1)]}
                  for i, c in enumerate(asked.continuations)]  # fmt: skip
        return httpx.Response(200, json={"model": asked.model, "created_at": "2026-11-25T00:00:00Z", "scores": scores,
                                         "prompt_eval_count": 7, "eval_count": 2, "total_duration": 1, "load_duration": 0})  # fmt: skip

    usage = LLMUsage()
    assert await client(httpx.MockTransport(answer)).score("Q: who? A:", [" Ann", " Bo"], usage) == [-1.5, -3.0]
    assert (usage.prompt_tokens, usage.eval_tokens, usage.calls) == (7, 2, 1)


async def test_a_server_without_the_route_is_not_an_error_and_is_not_asked_again() -> None:
    asked: list[str] = []

    def missing(request: httpx.Request) -> httpx.Response:  # as an official Ollama answers an unknown route
        asked.append(request.url.path)
        return httpx.Response(404, text="404 page not found")

    llm = client(httpx.MockTransport(missing))
    assert await llm.score("p", ["a"], LLMUsage()) is None
    assert await llm.score("p", ["b"], LLMUsage()) is None and len(asked) == 1


async def test_a_server_that_refuses_says_so_whatever_its_words() -> None:
    def refuses(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404, json={"error": "no such thing here"})  # words that name no model

    with pytest.raises(ModelError, match="refused a scoring request: 404"):
        await client(httpx.MockTransport(refuses)).score("p", ["a"], LLMUsage())
