"""Finishing a run: one step, however the run ended.

The relay at the end of a run, a local run that could not start, the single-call baseline and
the service's recovery of a run that a restart cut off all call :func:`finish_run`. It gathers
what the run left (the frame log, the agents' memory), scores the answer, counts the model's time
and the protocol's cost, writes ``metrics.json`` and ``config.json``, and archives them with the
agents' workspaces in ``run_artifacts.tar.gz``. What each caller knows of its run comes in typed
(:class:`Ending`, :class:`WireEnd`, :class:`DirectCall`); nothing else assembles ``metrics.json``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..settings import Settings
from ..tasks import Task
from .archive import write_archive
from .metrics import (
    AgentMetrics,
    FrameRecord,
    MemberEvent,
    RunMetrics,
    ScoringChoice,
    Totals,
    WireLayers,
    read_log,
)
from .modeltime import memory_bytes, model_time, parse_memories
from .scoring import score
from .wirecost import protocol_cost

FILES = ("frames.jsonl", "metrics.json", "config.json")  # a run folder's own files, archived at the root


@dataclass(frozen=True)
class Ending:
    """How the run ended: its status (``errors.run_status`` names an error's), why, and the
    answer it gave (empty: none)."""

    status: str
    error: str | None = None
    prediction: str = ""
    made_by: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Announced:
    """What the agents announced about their model at the handshake."""

    backends: frozenset[str] = frozenset()  # how they reach the model: ollama | openai
    kinds: frozenset[str] = frozenset()  # base | chat
    schemas: frozenset[str] = frozenset()  # tools whose model output is held to JSON schemas
    scoring: Mapping[str, ScoringChoice] = field(default_factory=dict)  # tool -> its answer choice


@dataclass(frozen=True)
class WireEnd:
    """What the relay saw of the run, at its end. ``totals`` None: the frame log as written is
    the truth (the relay could not write all of it), so the counters are folded from it."""

    routing: str
    totals: Totals | None
    agents: Mapping[str, AgentMetrics]
    membership: list[MemberEvent]
    elapsed_ms: float
    wall_ms: float
    announced: Announced = Announced()
    layers: WireLayers | None = None  # TRANSPORT=native: the wire below the packet, from the tap


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
    workspaces: Mapping[str, Path] | None = None,
    missing: Mapping[str, str] | None = None,
) -> RunMetrics:
    """Write the run's ``metrics.json``, ``config.json`` and ``run_artifacts.tar.gz`` in ``out``
    (with the agents' ``workspaces``; ``missing``: those that could not be had, and why), from
    what is in ``out`` already (``frames.jsonl``) and what the caller knows. Raises ``OSError``
    when they cannot be written."""
    folders = dict(workspaces or {})
    log = out / "frames.jsonl"
    records = read_log(log) if log.is_file() else []
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
    metrics.write(out / "metrics.json")
    (out / "config.json").write_text(
        json.dumps({"settings": settings.public_dict(), "task": str(task.path), "run_id": run_id}, indent=2)
    )
    write_archive(out / "run_artifacts.tar.gz", workspaces=folders, files=[out / name for name in FILES], pinned=raw)
    return metrics


def _direct(call: DirectCall) -> dict[str, Any]:
    return {
        "token_sum": call.token_sum, "backend": call.backend, "model_kind": call.model_kind,
        "llm_ms": round(call.llm_ms, 3), "elapsed_ms": round(call.elapsed_ms, 3), "wall_ms": round(call.elapsed_ms, 3),
    }  # fmt: skip


def _mesh(
    settings: Settings, records: list[FrameRecord], memories: Mapping[str, Mapping[str, Any]], wire: WireEnd | None
) -> dict[str, Any]:
    """A mesh run's counters, model time and wire cost, from the frame log and the agents'
    memory (and the relay's own view of the run, when it ran)."""
    totals = wire.totals if wire is not None and wire.totals is not None else _fold(records)
    totals.llm_ms, agent_ms = model_time(records, memories)  # the model's time, kept off the wire
    encode_us = [us for memory in memories.values() for us in memory.get("encode_us", [])]
    fields: dict[str, Any] = {
        "strategy": settings.strategy,
        "ablated": ",".join(sorted(settings.ablated)),
        "protocol": settings.protocol,
        "transport": settings.transport,
        **totals.fields(),
        **protocol_cost(records, encode_us).model_dump(),
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
        "layers": wire.layers,
        "stream": next((m["stream"] for m in memories.values() if "stream" in m), None),  # the coordinator's
    }


def _fold(records: list[FrameRecord]) -> Totals:
    totals = Totals()
    for record in records:
        totals.add(record)
    return totals

