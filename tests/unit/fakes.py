"""A fast stand-in for the model, for unit tests of one layer (the e2e tests use the real one)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from gaiamesh.models.llm import LLMUsage
from gaiamesh.models.prompts import Prompt


class FakeLLM:
    """Answers answer-prompts with ``answer`` and triple-prompts with a fixed triple."""

    def __init__(self, answer: str = "148 megawatts", delay: float = 0.0) -> None:
        self.answer = answer
        self.delay = delay  # seconds each call takes, for tests that act while a run is in flight
        self.prompts: list[str] = []
        self.scored: list[str] = []  # prompts whose continuations were asked to be scored
        self.schemas: list[dict[str, Any]] = []  # the schemas output was asked under

    async def complete(
        self, asked: Prompt | str, usage: LLMUsage, num_predict: int = 24, stop: tuple[str, ...] = ("\n",),
        schema: dict[str, Any] | None = None,
    ) -> str:
        prompt = asked.text if isinstance(asked, Prompt) else asked
        self.prompts.append(prompt)
        if self.delay:
            await asyncio.sleep(self.delay)  # the model's latency, not a synchronization
        usage.calls += 1
        usage.prompt_tokens += len(prompt.split())
        usage.eval_tokens += 3
        usage.llm_ms += 1.0
        if schema is not None:
            return self._held(schema)
        if prompt.rstrip().endswith("Triple: ("):
            return "farm | has capacity | 148 megawatts)\n"
        return f" {self.answer}\n"

    def _held(self, schema: dict[str, Any]) -> str:
        """What a grammar lets through: ``answer`` where the schema allows it, else the first
        value it allows; a triple for the triple schema."""
        self.schemas.append(schema)
        if "subject" in schema["properties"]:
            return json.dumps({"subject": "farm", "relation": "has capacity", "object": "148 megawatts"})
        allowed = schema["properties"]["answer"].get("enum")
        return json.dumps({"answer": self.answer if not allowed or self.answer in allowed else allowed[0]})

    async def score(self, asked: Prompt | str, continuations: list[str], usage: LLMUsage) -> list[float] | None:
        """Like an official Ollama: no ``/api/score``, so callers use their fallback."""
        self.scored.append(asked.text if isinstance(asked, Prompt) else asked)
        return None


class Chooser:
    """A model that chooses: it likes the continuations holding ``likes`` best (log-probability
    -1, the rest -5), or, with ``scores=False``, cannot score and reads ``likes`` as its answer
    (as JSON under a schema). Several values are liked in turn, one per call. The real model's
    choices are tested end to end."""

    def __init__(self, *likes: str, scores: bool = True) -> None:
        self.queue, self.scores = list(likes), scores
        self.offered: list[list[str]] = []

    @property
    def likes(self) -> str:
        return self.queue[0] if self.queue else ""

    def _next(self) -> None:
        if len(self.queue) > 1:
            self.queue.pop(0)

    async def score(self, prompt: Any, continuations: list[str], usage: LLMUsage) -> list[float] | None:
        self.offered.append([c.strip() for c in continuations])
        usage.calls += 1
        liked = [-1.0 if self.likes and self.likes in c else -5.0 for c in continuations]
        if self.scores:
            self._next()
        return liked if self.scores else None

    async def complete(self, prompt: Any, usage: LLMUsage, num_predict: int = 24, stop: Any = (), schema: Any = None) -> str:
        usage.calls += 1
        allowed = schema["properties"]["answer"].get("enum", []) if schema else []
        self.offered.append(list(allowed))
        said = self.likes if not allowed or self.likes in allowed else allowed[0]
        reply = json.dumps({"answer": said}) if schema else f" {said}"
        self._next()
        return reply
