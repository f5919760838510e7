"""Finishing a run: one step, however the run ended.

A relay's run (:func:`run_and_finish`: the network runs, hands back what happened on the wire,
and is finished here), a local run that could not start, the single-call baseline and the
service's recovery of a run that a restart cut off all call :func:`finish_run`. It takes what the
run left (the frame records, the agents' memory), scores the answer, counts the model's time and
the protocol's cost, writes ``metrics.json`` (:func:`write_metrics`, the one writer of that file)
and ``config.json``, and archives them with the agents' workspaces in ``run_artifacts.tar.gz``.
What each caller knows of its run comes in typed (:class:`~gaiamesh.mesh.wireend.Ending`,
:class:`~gaiamesh.mesh.wireend.WireEnd`, :class:`DirectCall`); nothing else assembles
``metrics.json``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import StorageError
from ..mesh.records import FrameRecord, Totals
from ..mesh.wireend import Ending, WireEnd
from ..settings import Settings
from ..tasks import Task
from .archive import write_archive
from .metrics import RunMetrics, read_log
from .modeltime import memory_bytes, model_time, parse_memories
from .scoring import score
from .wirecost import enveloped, protocol_cost

if TYPE_CHECKING:  # the network is only run here, never built: evaluation sits above mesh
    from ..mesh.relay import MeshNetwork

FILES = ("frames.jsonl", "metrics.json", "config.json")  # a run folder's own files, archived at the root


@dataclass(frozen=True)
class DirectCall:
    """A run that asked the model once, with no mesh (the baseline)."""

    backend: str
    model_kind: str | None
    token_sum: int | None
    llm_ms: float
    elapsed_ms: float


def finish_run(
    out: Path,
    settings: Settings,
    task: Task,
    ending: Ending,
    *,
    run_id: str = "",
    wire: WireEnd | None = None,
    direct: DirectCall | None = None,
    records: Sequence[FrameRecord] = (),
    workspaces: Mapping[str, Path] | None = None,
    missing: Mapping[str, str] | None = None,
) -> RunMetrics:
    """Write the run's ``metrics.json``, ``config.json`` and ``run_artifacts.tar.gz`` in ``out``
    (with the agents' ``workspaces``; ``missing``: those that could not be had, and why), from
    the run's frame ``records`` (those of ``frames.jsonl``, already in ``out``) and what the
    caller knows. Raises ``OSError`` when they cannot be written."""
    folders = dict(workspaces or {})
    raw = memory_bytes(folders)  # read once: the metrics and the archive hold the same memory
    memories = parse_memories(raw)
    fields: dict[str, Any] = {
        "status": ending.status,
        "error": ending.error,
        "mode": "baseline" if direct is not None else "mesh",
        "run_id": run_id,
        "task_id": task.task_id, "question": task.question, "answer": task.answer, "answers": list(task.answers),
        "model": settings.model, "scorer": settings.scorer,
        "prediction": ending.prediction,
        "made_by": dict(ending.made_by),
        **score(settings.scorer, ending.prediction, task.golds).model_dump(),
        "workspaces_missing": dict(missing or {}),
    }
    if direct is not None:
        fields |= _direct(direct)
    else:
        fields |= _mesh(settings, records, memories, wire)
    metrics = RunMetrics.model_validate(fields)
    write_metrics(metrics, out)
    (out / "config.json").write_text(
        json.dumps({"settings": settings.public_dict(), "task": str(task.path), "run_id": run_id}, indent=2)
    )
    write_archive(out / "run_artifacts.tar.gz", workspaces=folders, files=[out / name for name in FILES], pinned=raw)
    return metrics


async def run_and_finish(network: MeshNetwork) -> RunMetrics:
    """Run ``network`` to its end and finish the run from what happened on its wire: the one way
    every caller runs a relay. Raises :class:`StorageError` when the results cannot be written."""
    return finish_wire(network.out_dir, network.settings, network.task, await network.run(), network.run_id)


def finish_wire(out: Path, settings: Settings, task: Task, wire: WireEnd, run_id: str) -> RunMetrics:
    """Finish a relay's run from its :class:`WireEnd`, then remove the workspaces it fetched from
    agents elsewhere (the archive holds them now)."""
    try:
        metrics = finish_run(out, settings, task, wire.ending, run_id=run_id, wire=wire, records=wire.records,
                             workspaces=wire.workspaces, missing=wire.missing)  # fmt: skip
    except OSError as exc:
        raise StorageError(
            f"cannot write the run's results in {out}: {exc}"
            + (f" (the run had ended: {wire.storage_error})" if wire.storage_error else "")
        ) from exc
    if wire.staging is not None:
        shutil.rmtree(wire.staging, ignore_errors=True)
    return metrics


def logged(out: Path) -> list[FrameRecord]:
    """The frame records a run left in ``out`` (none when it has no ``frames.jsonl``): what a run
    that could not start, or that a restart cut off, is finished from."""
    log = out / "frames.jsonl"
    return read_log(log) if log.is_file() else []


def write_metrics(metrics: RunMetrics, folder: Path) -> Path:
    """Write ``metrics.json`` in ``folder`` atomically (a reader never sees half a file): the one
    writer of that file, for runs finished here and copies fetched from a service."""
    path = folder / "metrics.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(metrics.model_dump_json(indent=2), encoding="utf-8")
    tmp.replace(path)
    return path


def _direct(call: DirectCall) -> dict[str, Any]:
    return {
        "token_sum": call.token_sum, "backend": call.backend, "model_kind": call.model_kind,
        "llm_ms": round(call.llm_ms, 3), "elapsed_ms": round(call.elapsed_ms, 3), "wall_ms": round(call.elapsed_ms, 3),
    }  # fmt: skip


def _mesh(
    settings: Settings, records: Sequence[FrameRecord], memories: Mapping[str, Mapping[str, Any]], wire: WireEnd | None
) -> dict[str, Any]:
    """A mesh run's counters, model time and wire cost, from the frame log and the agents'
    memory (and the relay's own view of the run, when it ran)."""
    totals = wire.totals if wire is not None and wire.totals is not None else _fold(records)
    totals.llm_ms, agent_ms = model_time(records, memories)  # the model's time, kept off the wire
    encode_us = [us for memory in memories.values() for us in memory.get("encode_us", [])]
    cost = protocol_cost(records, encode_us)
    layers = wire.layers if wire is not None else None
    if layers is not None:  # the native wire: the protocol's envelope is in the HTTP bodies
        layers, cost = enveloped(layers, cost, totals, records)
    fields: dict[str, Any] = {
        "strategy": settings.strategy,
        "ablated": ",".join(sorted(settings.ablated)),
        "protocol": settings.protocol,
        "transport": settings.transport,
        **totals.fields(),
        **cost.model_dump(),
    }
    if wire is None:
        return fields
    said = wire.announced
    return fields | {
        "routing": wire.routing,
        "backend": ",".join(sorted(said.backends)) or None,
        "model_kind": ",".join(sorted(said.kinds)) or None,
        "schemas": sorted(said.schemas),
        "answer_choice": ",".join(sorted({s.choice for s in said.scoring.values()})) or None,
        "scoring": dict(sorted(said.scoring.items())),
        "elapsed_ms": round(wire.elapsed_ms, 3),
        "wall_ms": round(wire.wall_ms, 3),
        "network_share": round(max(0.0, 1 - totals.llm_ms / wire.elapsed_ms), 4) if wire.elapsed_ms > 0 else 0.0,
        "agents": {n: replace(a, llm_ms=round(agent_ms.get(n, 0.0), 3)) for n, a in wire.agents.items()},
        "membership": wire.membership,
        "layers": layers,
        "external_layers": wire.external,
        "stream": next((m["stream"] for m in memories.values() if "stream" in m), None),  # the coordinator's
    }


def _fold(records: Sequence[FrameRecord]) -> Totals:
    totals = Totals()
    for record in records:
        totals.add(record)
    return totals

