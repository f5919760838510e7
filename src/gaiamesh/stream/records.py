"""What a stream writes of each item: ``items.jsonl`` in the coordinator's workspace (each
item's fate as it ends, :class:`FateLine`) and ``items.csv`` (one row per item, :class:`ItemRow`),
so that a stream cut short keeps the rows of what it finished. Times are seconds from the
stream's start; the bytes come from the relay's frame log, the model's time from the worker."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import IO

from pydantic import BaseModel, ConfigDict

from ..errors import RunError
from ..evaluation.streams import AttemptLine, FateLine
from .dispatch import Fate

COLUMNS = ("item_id", "worker", "status", "prediction", "queued_s", "sent_s", "answered_s", "queue_wait_s",
           "latency_s", "model_s", "wire_s", "sends", "retries", "duplicates", "why", "bytes", "quality")  # fmt: skip


def fate_line(fate: Fate, started_s: float, ids: dict[int, str] | None = None, model_ms: float | None = None,
              tokens: int | None = None) -> FateLine:  # fmt: skip
    """``fate`` as a line of ``items.jsonl``, with its times from ``started_s``; ``ids``: the
    sub-task id of each attempt."""
    return FateLine(
        id=fate.item.id, status=fate.status, prediction=fate.prediction, answered_by=fate.answered_by,
        queued_s=fate.queued_s - started_s, why=fate.why, answers=list(fate.item.answers),
        answered_s=None if fate.answered_s is None else fate.answered_s - started_s,
        attempts=[
            AttemptLine(worker=a.worker, sent_s=a.sent_s - started_s, outcome=a.outcome, why=a.why, late=a.late,
                        ended_s=None if a.ended_s is None else a.ended_s - started_s,
                        sub_task_id=(ids or {}).get(i))
            for i, a in enumerate(fate.attempts)
        ],
        model_ms=model_ms, tokens=tokens,
    )  # fmt: skip


class ItemRow(BaseModel):
    """One row of ``items.csv`` (the columns scripts read, in :data:`COLUMNS`' order).
    ``wire_s``: the answering send's time less the model's, i.e. on the wire, in the relay and
    in the agents' own code; ``quality``: the item's score where it has gold answers."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    worker: str
    status: str
    prediction: str
    queued_s: float
    sent_s: float | None
    answered_s: float | None
    queue_wait_s: float | None
    latency_s: float | None
    model_s: float | None
    wire_s: float | None
    sends: int
    retries: int
    duplicates: int
    why: str
    bytes: int
    quality: float | None

    @classmethod
    def of(cls, fate: Fate, started_s: float, wire_bytes: int = 0) -> ItemRow:
        return cls.of_line(fate_line(fate, started_s), wire_bytes)

    @classmethod
    def of_line(
        cls, line: FateLine, wire_bytes: int = 0, quality: float | None = None, model_spent: bool = True
    ) -> ItemRow:
        """``model_spent``: False on a replay that answers at once, where the model's recorded
        time was not spent (the send's whole time was the wire's)."""
        sends = line.sends
        first = sends[0].sent_s if sends else None
        answering = next((a for a in reversed(line.attempts) if a.outcome == "answered"), None)
        model = None if line.model_ms is None else line.model_ms / 1000
        wire = None
        if answering is not None and answering.ended_s is not None and model is not None:
            wire = max(0.0, answering.ended_s - answering.sent_s - (model if model_spent else 0.0))
        return cls(
            item_id=line.id, worker=line.answered_by or (sends[-1].worker if sends else ""), status=line.status,
            prediction=line.prediction or "", queued_s=line.queued_s, sent_s=first, answered_s=line.answered_s,
            queue_wait_s=None if first is None else first - line.queued_s,
            latency_s=None if line.answered_s is None else line.answered_s - line.queued_s, model_s=model, wire_s=wire,
            sends=len(sends), retries=max(0, len(sends) - 1),
            duplicates=line.duplicates, why=line.why, bytes=wire_bytes,
            quality=quality,
        )  # fmt: skip


class ItemsCsv:
    """``items.csv`` open for the stream's length: a row per item as it ends, flushed at once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[str] = path.open("w", newline="")
        self._writer = csv.DictWriter(self._file, fieldnames=COLUMNS)
        self._writer.writeheader()
        self.written: set[str] = set()

    def write(self, row: ItemRow) -> None:
        if row.item_id in self.written:
            raise RunError(
                f"item {row.item_id!r} has a row in {self.path} already: an item's fate is told once"
            )
        self.written.add(row.item_id)
        values = row.model_dump()
        self._writer.writerow({k: "" if values[k] is None else _fmt(values[k]) for k in COLUMNS})
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> ItemsCsv:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _fmt(value: object) -> str:
    return f"{value:.4f}" if isinstance(value, float) else str(value)
