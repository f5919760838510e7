"""``stream.json``'s schema (``gaiamesh stream``'s report, docs/stream.md) and the lines of a
coordinator's ``items.jsonl`` (each item's fate as it ends), written once: the stream's team and
the bench room write them, the service reads them back for ``GET /api/streams/{id}`` (the
figures of a running stream so far, :func:`progress_of`, from the lines told until then)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from .metrics import Latency, StreamSummary


class AttemptLine(BaseModel):
    """One send of an item (``late``: an answer from a worker given up on)."""

    model_config = ConfigDict(extra="forbid")

    worker: str
    sent_s: float
    ended_s: float | None
    outcome: str | None
    why: str = ""
    late: bool = False
    sub_task_id: str | None = None


class FateLine(BaseModel):
    """One line of ``items.jsonl``: an item's fate, written by the coordinator when it ends."""

    model_config = ConfigDict(extra="forbid")

    id: str
    status: str
    prediction: str | None
    answered_by: str | None
    queued_s: float
    answered_s: float | None
    why: str = ""
    answers: list[str] = []
    attempts: list[AttemptLine] = []
    model_ms: float | None = None  # the answering worker's time inside model calls
    tokens: int | None = None

    @property
    def sends(self) -> list[AttemptLine]:
        return [a for a in self.attempts if not a.late]

    @property
    def duplicates(self) -> int:
        return sum(a.outcome == "duplicate" for a in self.attempts)


class StreamProgress(BaseModel):
    """A running stream's figures so far, from the items its coordinator has told (``items.jsonl``)."""

    model_config = ConfigDict(extra="forbid")

    total: int | None  # the items the stream will send (None: not known yet)
    told: int  # items with a fate
    answered: int
    empty: int
    failed: int
    lost_sends: int  # sends whose worker was lost
    latency_p50_s: float | None  # queued to answered, over the items a worker replied to
    latency_max_s: float | None


def progress_of(lines: list[FateLine], total: int | None) -> StreamProgress:
    """The figures so far of a stream whose coordinator has told ``lines`` (pure)."""
    replied = sorted(ln.answered_s - ln.queued_s for ln in lines
                     if ln.status in ("answered", "empty") and ln.answered_s is not None)  # fmt: skip
    return StreamProgress(
        total=total, told=len(lines), answered=sum(ln.status == "answered" for ln in lines),
        empty=sum(ln.status == "empty" for ln in lines), failed=sum(ln.status == "failed" for ln in lines),
        lost_sends=sum(a.outcome == "lost" for ln in lines for a in ln.attempts),
        latency_p50_s=replied[(len(replied) - 1) // 2] if replied else None, latency_max_s=replied[-1] if replied else None,
    )  # fmt: skip


class StormKill(BaseModel):
    """One kill: seconds from the stream's start, the worker, when its restart was made."""

    t: float
    node: str
    restarted: float | None


class StormReport(BaseModel):
    """``stream.json``'s ``storm``: what blew, and the kills it made."""

    model_config = ConfigDict(extra="forbid")

    kill: int
    every_s: float
    down_s: float
    seed: int
    limit: int
    kills: list[StormKill]


class Bytes(BaseModel):
    """Bytes per item at each layer: the packets (its sub-task and result frames, in and out, from
    the relay's frame log), and on the native wire the sockets' bytes and TCP/IP's headers of the
    whole run (the tap's counts, ``metrics.json``'s ``layers``) shared over the items."""

    mean: float
    p50: float
    p95: float
    doc_init: int  # the work list itself, once, to the coordinator
    http_mean: float | None = None  # native: the sockets' bytes (HTTP heads and bodies) per item
    ip_tcp_mean: float | None = None  # native: TCP/IP header bytes per item


class StreamReport(BaseModel):
    """``stream.json``: what ran, and the stream's figures."""

    model_config = ConfigDict(extra="forbid")

    tasks: str
    items: int
    workers: int
    policy: str
    per_worker: int
    protocol: str
    transport: str
    backend: str
    replay: str | None
    pace: str | None
    status: str
    error: str | None
    summary: StreamSummary
    # seconds from an item's first send to its answer: ProtocolBench's latency per request (the
    # summary's latency also counts the wait in the coordinator's queue)
    service: Latency | None
    model: Latency | None  # seconds inside model calls, per answered item (on a replay: as recorded)
    wire: Latency | None  # seconds of each answering send not in the model
    bytes: Bytes | None
    decode_us_p50: float | None
    decode_us_p95: float | None
    quality: float | None  # mean score of the items that have gold answers
    scored: int
    wall_ms: float
    sent: int  # the items handed to the coordinator
    unaccounted: int  # of those, the items with no fate in items.jsonl (lost)
    told_twice: int  # items with more than one fate (answered twice)
    storm: StormReport | None = None
    # the relay process's CPU seconds (user and system, from the kernel: its start-up too) and
    # the frames it carried
    relay_cpu_s: float | None = None
    frames: int = 0
    # the peak memory of a local team, its relay and the stream command together (PSS, MiB)
    memory_peak_mib: float | None = None
    # local: the team started for the stream beside the relay; deployed: the agents AGENTS names
    # (a compose or swarm stack's), with the answerers it found (``worker_ids``)
    team: str = "local"
    worker_ids: list[str] = []
