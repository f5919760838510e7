"""``/api/score``'s request and response: one model each, shared by our model server (which
serves the route) and the agents' client (which calls it). The route is ours, not Ollama's: how
likely the model finds each continuation right after a prompt."""

from __future__ import annotations

from pydantic import BaseModel, Field


class ScoreRequest(BaseModel):
    """How likely the model finds each continuation right after ``prompt`` (raw, no template)."""

    model: str = Field(min_length=1)
    prompt: str = Field(min_length=1)
    continuations: list[str] = Field(min_length=1, max_length=64)


class Scored(BaseModel):
    """One continuation: its summed and per-token log-probabilities."""

    continuation: str
    logprob: float
    token_logprobs: list[float]


class ScoreResponse(BaseModel):
    """The scores, in the order asked, and the work counted as ``/api/generate`` counts it."""

    model: str
    created_at: str
    scores: list[Scored]
    prompt_eval_count: int
    eval_count: int
    total_duration: int
    load_duration: int


class ServerError(BaseModel):
    """An Ollama-style error body (``{"error": ...}``): the server has the route and refused
    the request (unknown model, bad input). A server without the route answers otherwise."""

    error: str
