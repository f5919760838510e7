"""The baseline: one direct call to the same model with the whole document, scored the same way."""

from __future__ import annotations

import time
from pathlib import Path

from ...errors import ModelError, RunStatus, run_status
from ...evaluation.finish import DirectCall, finish_run
from ...evaluation.metrics import RunMetrics
from ...mesh.wireend import Ending
from ...models.llm import LLMClient, LLMUsage
from ...models.prompts import answer_prompt, clean_answer
from ...settings import Settings
from ...tasks import Task


async def run_baseline(settings: Settings, task: Task, out: Path) -> RunMetrics:
    """Ask the model once; finish the run as a mesh run is finished (``metrics.json`` in the same
    schema, ``mode`` baseline)."""
    out.mkdir(parents=True, exist_ok=True)
    llm = LLMClient.from_settings(settings)
    usage = LLMUsage()
    started = time.perf_counter()
    ending, kind = Ending(RunStatus.OK), None
    try:
        kind = await llm.kind()
        ending = Ending(RunStatus.OK, prediction=clean_answer(await llm.complete(answer_prompt(task.doc, task.question), usage)))
    except ModelError as exc:  # unreachable, or refused: the status says which
        ending = Ending(run_status(exc), str(exc))
    elapsed = (time.perf_counter() - started) * 1000
    call = DirectCall(llm.backend.name, kind, usage.reported, usage.llm_ms, elapsed)
    return finish_run(out, settings, task, ending, direct=call)
