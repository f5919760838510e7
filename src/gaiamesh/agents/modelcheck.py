"""An agent's model, checked once before the agent serves: the model server answers and serves
MODEL, whether the tool's output is held to JSON schemas (``SCHEMAS``), and, where the tool scores
continuations, whether it chooses answers by likelihood or by weights (``ANSWER_CHOICE``). What
it finds, the agent's handshake announces and ``metrics.json`` records."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

from ..errors import ConfigError
from ..models.llm import AnswerChoice, LLMClient, decide_answer_choice
from ..settings import Settings
from ..tools.tool import Tool

# The agent's own log: these lines say what the agent found, as they did inside agent.py.
log = logging.getLogger("gaiamesh.agents.agent")


@dataclass(frozen=True)
class CheckedModel:
    """What the check found: whether the tool's output is held to schemas, what the handshake
    announces of the model, and the settings with the answer choice made."""

    schemas: bool
    announced: dict[str, Any]
    settings: Settings


async def check_model(llm: LLMClient, tool: Tool, settings: Settings, node_id: str) -> CheckedModel:
    """Raises ModelError (or ConfigError) in one line when the model cannot serve ``tool`` as
    the settings ask."""
    parses = tool.uses_schemas(settings) if tool.uses_schemas is not None else None
    # auto: JSON (plans, splits) wherever the backend holds it; triples and typed answers on a
    # chat model only: a base model's few-shot pattern already fixes their form, and holding
    # them cost it time for no gain (docs/results/2026-11-26-structured-output.md). Only what
    # would be held is probed, so that a default team starts as fast as before.
    profile = await llm.profile()
    wanted = parses is not None and settings.schemas != "off" and (
        settings.schemas == "on" or parses == "json" or profile.kind == "chat"
    )
    if wanted:
        profile = replace(profile, schemas=await llm.holds_schemas())
    if wanted and settings.schemas == "on" and not profile.schemas:
        raise ConfigError(
            f"SCHEMAS=on, but the {profile.backend} server at {llm.host} holds no output to a JSON "
            f"schema for this model (MODEL_KIND={profile.kind}); set SCHEMAS=auto or off"
        )
    schemas = bool(wanted and profile.schemas)
    made = await _choose_answers(llm, tool, settings, node_id, profile.backend)
    if made is not None:
        settings = settings.model_copy(update={"answer_choice": made.choice})
    announced = {"backend": profile.backend, "model_kind": profile.kind, "schemas": schemas} | (
        {"answer_choice": made.choice, "passage_ms": made.passage_ms, "answer_choice_why": made.why} if made else {}
    )
    log.info("agent %s: model %s via %s (%s)", node_id, profile.model, profile.backend, profile.kind)
    return CheckedModel(schemas, announced, settings)


async def _choose_answers(
    llm: LLMClient, tool: Tool, settings: Settings, node_id: str, backend: str
) -> AnswerChoice | None:
    """Where the tool scores continuations: likelihood or weights, as ANSWER_CHOICE asks and,
    under ``auto``, as the scoring probe finds the backend's cost (a tool that scores
    nothing probes nothing). The tool then reads the choice from the settings."""
    if not tool.scores:
        return None
    asked = settings.answer_choice
    cost = None if asked == "weights" else await llm.scoring_cost(settings.score_budget_ms)
    server = f"{backend} server at {llm.host}"
    if asked == "likelihood" and cost is None:
        raise ConfigError(
            f"ANSWER_CHOICE=likelihood, but the {server} gives no log-probabilities of a continuation "
            "(ANSWER_CHOICE=auto falls back to weights)"
        )
    made = decide_answer_choice(asked, cost, settings.score_budget_ms, server)
    log.info("agent %s: answers by %s (%s)", node_id, made.choice, made.why)
    return made
