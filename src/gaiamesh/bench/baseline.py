"""The baseline: one direct call to the same model with the whole document, scored the same way."""

from __future__ import annotations

import time
from pathlib import Path

from ..evaluation.metrics import RunMetrics
from ..evaluation.scoring import score
from ..models.llm import LLMClient, LLMUsage, ModelError, ModelUnreachable
from ..models.prompts import answer_prompt, clean_answer
from ..settings import Settings
from ..tasks import Task


async def run_baseline(settings: Settings, task: Task, out: Path) -> RunMetrics:
    """Ask the model once; write ``metrics.json`` in the same schema as a mesh run."""
    out.mkdir(parents=True, exist_ok=True)
    llm = LLMClient.from_settings(settings)
    usage = LLMUsage()
    started = time.perf_counter()
    status, error, prediction, kind = "ok", None, "", None
    try:
        kind = await llm.kind()
        prediction = clean_answer(await llm.complete(answer_prompt(task.doc, task.question), usage))
    except ModelUnreachable as exc:
        status, error = "model_unreachable", str(exc)
    except ModelError as exc:
        status, error = "model_error", str(exc)
    elapsed = (time.perf_counter() - started) * 1000
    metrics = RunMetrics.model_validate(
        {
            "status": status,
            "error": error,
            "mode": "baseline",
            **RunMetrics.describing(task, settings.model, settings.scorer),
            "prediction": prediction,
            "token_sum": usage.reported,
            "backend": llm.backend.name,
            "model_kind": kind,
            "llm_ms": round(usage.llm_ms, 3),
            "elapsed_ms": round(elapsed, 3),
            "wall_ms": round(elapsed, 3),
            **score(settings.scorer, prediction, task.golds),
        }
    )
    metrics.write(out / "metrics.json")
    return metrics
