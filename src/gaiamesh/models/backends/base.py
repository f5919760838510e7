"""What every backend answers, whatever server is behind it: a completion of a prompt in the
form the model takes (raw text for a base model, messages for a chat model), optionally held
to a JSON schema; and, where the server can, the log-probability of given continuations.

Counts are the server's own; None where it gives none (never a guess, never 0)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from ..prompts import Prompt

ModelKind = Literal["base", "chat"]
BACKENDS = ("ollama", "openai", "replay")


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int | None
    eval_tokens: int | None
    ms: float | None = None  # the call's time where the backend knows it better (a replay)


@dataclass(frozen=True)
class Scores:
    """Each continuation's summed log-probability, in the order asked, and the work counted."""

    logprobs: list[float]
    prompt_tokens: int | None
    eval_tokens: int | None
    ms: float | None = None


@dataclass(frozen=True)
class Ask:
    """One completion request: the prompt, how much to generate, where to stop, and the JSON
    schema the answer must follow (None: free text)."""

    prompt: Prompt
    kind: ModelKind
    num_predict: int
    stop: tuple[str, ...]
    schema: dict[str, Any] | None = None


def completion_request(ask: Ask, model: str) -> dict[str, Any]:
    """A completion request as recorded with its answer (and looked up by a replay)."""
    return {
        "call": "complete", "model": model, "kind": ask.kind, "text": ask.prompt.text, "system": ask.prompt.system,
        "user": ask.prompt.user, "num_predict": ask.num_predict, "stop": list(ask.stop), "schema": ask.schema,
    }  # fmt: skip


def score_request(prompt: str, continuations: list[str], model: str) -> dict[str, Any]:
    """A scoring request as recorded with its answer (and looked up by a replay)."""
    return {"call": "score", "model": model, "text": prompt, "continuations": list(continuations)}


class Backend(Protocol):
    """A model server seen from the agents. Transport failures a restarted server cures raise
    :class:`~gaiamesh.errors.ModelUnreachable`; any other failure :class:`~gaiamesh.errors.ModelError`."""

    name: str
    where: str  # the server's address, for messages (never a key)

    async def kind(self) -> ModelKind:
        """Whether the model takes raw text or messages, as the server describes it."""
        ...

    async def check(self) -> None:
        """The server answers and serves the model; raises ModelError naming what is wrong."""
        ...

    async def complete(self, ask: Ask) -> Completion: ...

    async def score(self, prompt: str, continuations: list[str]) -> Scores | None:
        """None when the server cannot score (the caller weighs candidates without it)."""
        ...

    async def aclose(self) -> None: ...
