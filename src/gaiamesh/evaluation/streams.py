"""``stream.json``'s schema (``gaiamesh stream``'s report, docs/stream.md), written once: the
bench room writes it, the service reads it back for ``GET /api/streams/{id}``."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from .metrics import Latency, StreamSummary


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
