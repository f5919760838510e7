"""``items.csv``: one row per item of a stream, written as items end (each item's fate from
``dispatch``), so that a stream cut short keeps the rows of what it finished. Times are seconds
from the stream's start; the bytes columns are filled by the transport that counted them."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import IO

from pydantic import BaseModel, ConfigDict

from ..errors import RunError
from .dispatch import Fate

COLUMNS = ("item_id", "worker", "status", "prediction", "queued_s", "sent_s", "answered_s", "queue_wait_s",
           "latency_s", "sends", "retries", "duplicates", "why", "bytes")  # fmt: skip


class ItemRow(BaseModel):
    """One row of ``items.csv`` (the columns scripts read, in :data:`COLUMNS`' order)."""

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
    sends: int
    retries: int
    duplicates: int
    why: str
    bytes: int

    @classmethod
    def of(cls, fate: Fate, started_s: float, wire_bytes: int = 0) -> ItemRow:
        sends = fate.sends
        first = sends[0].sent_s - started_s if sends else None
        answered = fate.answered_s - started_s if fate.answered_s is not None else None
        queued = fate.queued_s - started_s
        return cls(
            item_id=fate.item.id, worker=fate.answered_by or (sends[-1].worker if sends else ""), status=fate.status,
            prediction=fate.prediction or "", queued_s=queued, sent_s=first, answered_s=answered,
            queue_wait_s=None if first is None else first - queued,
            latency_s=None if answered is None else answered - queued, sends=len(sends),
            retries=max(0, len(sends) - 1), duplicates=fate.duplicates, why=fate.why, bytes=wire_bytes,
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
            raise RunError(f"item {row.item_id!r} has a row in {self.path} already: an item's fate is told once")
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
