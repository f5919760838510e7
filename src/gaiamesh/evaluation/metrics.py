"""The relay's books: one record per frame, counters folded from those records, ``metrics.json``.

Every counter is computed by :meth:`Totals.add` from a :class:`FrameRecord`, both while the
relay runs and when ``gaiamesh audit`` re-reads ``frames.jsonl``, so "each counter equals the
sum over the frame log" holds by construction. Definitions (also in docs/architecture.md):

- ``bytes_rx``: encoded bytes received from agents (every frame, rejected ones included).
- ``bytes_tx``: encoded bytes sent to agents, each copy counted (doc_init included; a copy the
  network fault model lost on the way, ``dropped_fault``, left the relay and counts too).
- ``pkt_cnt``: packets the relay accepted (doc_init, every valid agent packet, redeliveries; not
  the lost copies).
- ``header_overhead``: protocol header bytes on the wire: ``header_size`` of each accepted
  packet times the number of times it crossed the wire (once in, plus once per copy out).
- ``token_sum``: sum of ``token_used`` of accepted packets (the model's own counts).
"""

from __future__ import annotations

import base64
import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

FrameStatus = Literal["accepted", "rejected", "redelivered", "dropped_fault"]


@dataclass(slots=True)
class FaultNote:
    """What the network fault model (``FAULT_*``, ``mesh/faults.py``) did to a frame: the
    ``fault`` of its line in ``frames.jsonl``, which only frames it touched have."""

    __pydantic_config__ = ConfigDict(extra="forbid")

    causes: list[str]  # latency, slow, partition, loss, queued (behind an earlier frame)
    in_ms: float = 0.0  # held on the sender's link before the relay took the frame
    out_ms: dict[str, float] = field(default_factory=dict)  # per receiver: held on its link
    attempt: int = 0  # dropped_fault: which copy of it to that receiver was lost (1: the first)


@dataclass(slots=True)
class FrameRecord:
    """One line of ``frames.jsonl``: a frame the relay handled, with its bytes in base64.

    A plain dataclass (one is made per frame on the relay's hot path); :data:`RECORD`
    validates and serializes it with pydantic."""

    __pydantic_config__ = ConfigDict(extra="forbid")

    n: int
    t_ms: float
    src: str
    dst: list[str]
    size: int
    rx_bytes: int  # the frame's size when it came in from an agent, else 0
    tx_bytes: int  # size times the copies sent
    header_size: int
    status: FrameStatus
    b64: str
    type: str | None = None
    tag: str | None = None
    token_used: int | None = 0  # null: the model server gave no counts for this step
    seq: int | None = None  # a packet from an agent: its seq, which names the step that made it
    error: str | None = None
    # µs the relay spent decoding, validating and verifying a frame that came in (None: the
    # relay's own frame, which it encoded)
    decode_us: float | None = None
    # Only on frames the network fault model touched: a run without faults writes what it always did.
    fault: Annotated[FaultNote | None, Field(exclude_if=lambda v: v is None)] = None

    def to_json(self) -> bytes:
        return RECORD.dump_json(self)

    @classmethod
    def of(
        cls,
        *,
        n: int,
        t_ms: float,
        src: str,
        dst: list[str],
        blob: bytes,
        received: bool,
        status: FrameStatus,
        header_size: int = 0,
        type: str | None = None,  # noqa: A002 (the frame log's field name)
        tag: str | None = None,
        token_used: int | None = 0,
        seq: int | None = None,
        error: str | None = None,
        decode_us: float | None = None,
        fault: FaultNote | None = None,
    ) -> FrameRecord:
        """The record of one frame, from the frame's bytes."""
        return cls(
            n=n,
            t_ms=round(t_ms, 3),
            src=src,
            dst=dst,
            size=len(blob),
            rx_bytes=len(blob) if received else 0,
            tx_bytes=len(blob) * len(dst),
            header_size=header_size,
            type=type,
            tag=tag,
            token_used=token_used,
            seq=seq,
            status=status,
            error=error,
            b64=base64.b64encode(blob).decode(),
            decode_us=None if decode_us is None else round(decode_us, 1),
            fault=fault,
        )


RECORD: TypeAdapter[FrameRecord] = TypeAdapter(FrameRecord)


@dataclass(slots=True)
class AgentMetrics:
    """Per agent: what the relay saw of it (counts folded from the frame records)."""

    __pydantic_config__ = ConfigDict(extra="forbid")

    node_id: str
    tool: str
    status: str = "registered"  # registered | connected | dead | left (a replica let go: see MemberEvent)
    pkts_sent: int = 0
    bytes_sent: int = 0
    pkts_received: int = 0
    bytes_received: int = 0
    rejected: int = 0
    token_used: int | None = 0  # None: its model server gave no counts
    llm_ms: float = 0.0
    note: str = ""


MemberChange = Literal["lost", "rejoined", "joined", "left"]


@dataclass(slots=True)
class ScoringChoice:
    """How an agent whose tool scores continuations chose among candidates, as it announced
    at the handshake: ``likelihood`` or ``weights``, what one scored passage was measured to
    cost on its backend at start-up (ms; None: not measured), and why."""

    __pydantic_config__ = ConfigDict(extra="forbid")

    choice: str
    passage_ms: float | None = None
    why: str = ""


@dataclass(slots=True)
class MemberEvent:
    """A change in the run's line-up, in ``metrics.json``'s ``membership``, in the order it
    happened. ``t_ms`` has the frame records' origin (the run's wall start), so the time from a
    replica's loss to its tool being routable again is ``joined``'s (or ``rejoined``'s) ``t_ms``
    minus ``lost``'s.

    - ``lost``: the agent's connection closed (it receives nothing; the relay tries to reach it).
    - ``rejoined``: the same agent answered again on its address.
    - ``joined``: a replica of a ``dns:`` entry of AGENTS found while the run went on
      (``DISCOVERY_INTERVAL``), or one let go whose address came back; it is routable from now.
    - ``left``: a lost replica whose address left DNS: let go, nothing waits for it any more.
    """

    __pydantic_config__ = ConfigDict(extra="forbid")

    t_ms: float
    node_id: str
    tool: str
    event: MemberChange


def outages_ms(events: list[MemberEvent]) -> dict[str, float]:
    """Per tool, the longest time from an agent's loss to the next agent of that tool coming
    in (``joined`` or ``rejoined``): for a tool that had one agent, the time it was not
    routable. A loss with no agent of its tool back afterwards is left out."""
    longest: dict[str, float] = {}
    lost: dict[str, float] = {}  # tool -> its earliest loss not yet followed by an agent back
    for e in events:
        if e.event == "lost":
            lost.setdefault(e.tool, e.t_ms)
        elif e.event in ("joined", "rejoined") and e.tool in lost:
            longest[e.tool] = max(longest.get(e.tool, 0.0), e.t_ms - lost.pop(e.tool))
    return longest


def _plus(total: int | None, more: int | None) -> int | None:
    """A token sum: unknown (None) as soon as one part is."""
    return None if total is None or more is None else total + more


@dataclass(slots=True)
class Totals:
    """The run's counters. Only :meth:`add` changes them (a plain dataclass: it is updated
    on every frame)."""

    bytes_tx: int = 0
    bytes_rx: int = 0
    pkt_cnt: int = 0
    header_overhead: int = 0
    token_sum: int | None = 0  # None once a step's server gave no counts: the sum is unknown, not short
    llm_ms: float = 0.0
    rejected_cnt: int = 0
    frames: int = 0

    def add(self, r: FrameRecord, agents: dict[str, AgentMetrics] | None = None) -> None:
        """Fold one frame record into the counters (and into the per-agent counts, if given)."""
        self.frames += 1
        self.bytes_rx += r.rx_bytes
        self.bytes_tx += r.tx_bytes
        if r.status == "dropped_fault":
            # a copy the network fault model lost: its bytes and header left the relay, but nobody
            # received it, and the packet itself is counted where it was accepted
            self.header_overhead += r.header_size * len(r.dst)
            return
        sender = agents.get(r.src) if agents is not None and r.rx_bytes else None
        if sender is not None:
            sender.pkts_sent += 1
            sender.bytes_sent += r.rx_bytes
        if agents is not None:
            for d in r.dst:
                if d in agents:
                    agents[d].pkts_received += 1
                    agents[d].bytes_received += r.size
        if r.status == "rejected":
            self.rejected_cnt += 1
            if sender is not None:
                sender.rejected += 1
            return
        self.pkt_cnt += 1
        self.header_overhead += r.header_size * ((1 if r.rx_bytes else 0) + len(r.dst))
        if r.status == "redelivered":
            return  # a redelivery repeats a packet whose tokens were already counted
        self.token_sum = _plus(self.token_sum, r.token_used)
        if sender is not None:
            sender.token_used = _plus(sender.token_used, r.token_used)

    # Every counter but the model time, which is a float, summed in order and rounded where it
    # is written out; the names are the fields above, not a second list of them.
    COUNTERS: ClassVar[tuple[str, ...]] = ()

    def fields(self) -> dict[str, int | float]:
        """The counters as ``metrics.json`` carries them (the model time rounded to µs)."""
        return {k: getattr(self, k) for k in self.COUNTERS} | {"llm_ms": round(self.llm_ms, 3)}


Totals.COUNTERS = tuple(f.name for f in dataclasses.fields(Totals) if f.name != "llm_ms")


Status = Literal[
    "ok", "running", "timeout", "agent_dead", "agent_error", "connect_failed", "model_unreachable",
    "model_error", "failed", "cancelled", "interrupted", "storage_error", "frame_lost",
]  # fmt: skip


class Scores(BaseModel):
    """The answer's scores (``evaluation/scoring.py`` computes them): all null when the run has no
    gold answer to score against (unscored is not wrong: such a run is left out of every mean).
    A run that has a gold answer but ended without an answer scores 0."""

    model_config = ConfigDict(extra="forbid")

    quality_score: float | None = None
    exact_match: int | None = None
    rouge_l: float | None = None
    gaia_match: int | None = None
    squad_em: int | None = None
    squad_f1: float | None = None


class WireCost(BaseModel):
    """What the protocol itself costs per message, apart from the model
    (``evaluation/wirecost.py`` computes it from the frame log and the agents' encode times)."""

    model_config = ConfigDict(extra="forbid")

    decode_us_p50: float | None = None
    decode_us_p95: float | None = None
    encode_us_p50: float | None = None
    encode_us_p95: float | None = None
    bytes_per_msg: float | None = None
    header_share: float | None = None


class WireLayers(BaseModel):
    """A native run's wire below the packet (``TRANSPORT=native``), counted at the relay's tap
    on each agent's connections (``mesh/native/tap.py``), summed over them; ``_tx``: toward the
    agents. ``http_*``: the bytes the sockets moved (request and status lines, headers,
    chunking, SSE framing and bodies); ``body_*``: the HTTP bodies alone (the protocol's
    envelope with the packet in it); the kernel's segments on the agents' side and the IP and
    TCP header bytes they carried (``TCP_INFO``); connections opened, and those that carried more
    than one request."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    http_tx: int = 0
    http_rx: int = 0
    body_tx: int = 0
    body_rx: int = 0
    requests: int = 0
    connections: int = 0
    connections_reused: int = 0
    segs_out: int = 0
    segs_in: int = 0
    ip_tcp_header_bytes: int = 0
    tcp_bytes_sent: int = 0
    tcp_bytes_received: int = 0
    unparsed: int = 0  # connections whose bytes did not read as HTTP/1.1 (counted, not split)
    refused: int = 0  # connections the tap could not open to the agent
    resets: int = 0  # connections network faults reset, each losing the request it carried (FAULT_LOSS)
    undelivered: int = 0  # frames the protocol's client gave up on (refused, reset, an error answer)
    # The protocol's first request to each agent (card, session, DID document, manifest):
    # its time and the bytes it moved both ways, medians over the agents.
    first_request_ms: float | None = None
    first_request_bytes: int | None = None
    # A frame's round trip when the agent answers with no frame (it only reads that packet, or
    # takes a sub-task's result): the protocol's request and answer with no tool's work in them.
    ack_ms_p50: float | None = None
    ack_ms_p99: float | None = None

    def __add__(self, other: WireLayers) -> WireLayers:
        """The counters summed (the timings are the gateway's, set on the sum)."""
        counted = [f for f, info in WireLayers.model_fields.items() if info.annotation in (int, "int")]
        return WireLayers(**{f: getattr(self, f) + getattr(other, f) for f in counted})


# A stream's figures (gaiamesh stream): computed by stream/summary.py from its items' fates.
class Latency(BaseModel):
    """Seconds: end to end (queued to answered), unless the field's name says otherwise."""

    model_config = ConfigDict(extra="forbid")

    n: int
    mean: float
    std: float
    p50: float
    p95: float
    p99: float
    max: float


class StreamSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")

    items: int
    answered: int
    failed: int
    success_rate: float  # answered (with text) of items
    empty: int = 0  # items a worker answered with no text: told, timed, not answered
    retries: int  # sends beyond each item's first
    duplicates: int  # answers after an item's answer: counted, never taken
    lost_sends: int  # sends whose worker was lost
    wall_s: float
    items_per_min: float
    latency: Latency | None
    queue_wait: Latency | None
    per_worker: dict[str, int]  # answers each worker gave
    worker_variance: float  # population variance of per_worker


class RunMetrics(Scores, WireCost):
    """``metrics.json``: the one schema every reader (bench, report, audit, the service) uses,
    written by one step (``evaluation/outcome.py``). Its parts are typed where they are
    computed (:class:`Scores`, :class:`WireCost`, :class:`Totals`' counters); a key it does not
    know is an error, never dropped."""

    model_config = ConfigDict(extra="forbid")

    status: Status
    error: str | None = None
    mode: Literal["mesh", "baseline"] = "mesh"
    run_id: str = ""
    task_id: str
    question: str
    answer: str
    answers: list[str] = Field(default_factory=list)  # every gold answer, when there are several
    prediction: str = ""
    strategy: str | None = None  # pipeline | orchestrated (the team that answered)
    ablated: str = ""  # tools left out (ABLATE: their input handed on unchanged), comma-separated
    protocol: str | None = None
    transport: Literal["relay", "native"] = (
        "relay"  # TRANSPORT: the relay's WebSocket, or the protocol's own wire
    )
    routing: str | None = None
    model: str
    backend: str | None = None  # how the agents reached the model: ollama | openai (as they announced it)
    model_kind: str | None = None  # base (raw completions) | chat (messages in the model's template)
    schemas: list[str] = Field(default_factory=list)  # tools whose model output was held to JSON schemas
    # likelihood | weights: how the agents that score chose answers (ANSWER_CHOICE, and under
    # `auto` what scoring was measured to cost at start-up); per tool, with the cost and why
    answer_choice: str | None = None
    scoring: dict[str, ScoringChoice] = Field(default_factory=dict)
    # who made each decision behind the answer: the plan, each step (model | template | tool)
    made_by: dict[str, str] = Field(default_factory=dict)
    scorer: str = "em_rouge"
    bytes_tx: int = 0
    bytes_rx: int = 0
    pkt_cnt: int = 0
    header_overhead: int = 0
    token_sum: int | None = 0  # null: the model server gave no counts (never a guess)
    llm_ms: float = 0.0
    rejected_cnt: int = 0
    elapsed_ms: float = 0.0
    wall_ms: float = 0.0
    network_share: float | None = None
    frames: int = 0
    agents: dict[str, AgentMetrics] = Field(default_factory=dict)
    # Agents lost, back, found by DNS or let go while the run went on (empty: the line-up held)
    membership: list[MemberEvent] = Field(default_factory=list)
    # Agents whose workspace is not in run_artifacts.tar.gz, and why (empty: every one is there)
    workspaces_missing: dict[str, str] = Field(default_factory=dict)
    # The native wire's layers below the packet (null: TRANSPORT=relay, where only frames are counted)
    layers: WireLayers | None = None
    # A stream's figures (strategy `stream`: its coordinator's summary of every item's fate);
    # absent from every other run's metrics.json
    stream: Annotated[StreamSummary | None, Field(exclude_if=lambda v: v is None)] = None

    def write(self, path: Path) -> Path:
        """Write ``metrics.json`` atomically (a reader never sees half a file)."""
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(self.model_dump_json(indent=2), encoding="utf-8")
        tmp.replace(path)
        return path

    @classmethod
    def read(cls, path: Path) -> RunMetrics:
        return cls.model_validate_json(path.read_bytes())

    @property
    def scored(self) -> bool:
        """Whether the run had a gold answer to score against."""
        return self.quality_score is not None

    @classmethod
    def columns(cls) -> list[str]:
        """The scalar fields (CSV columns, summary tables): the run's own in schema order, then
        its parts' (the scores, the wire cost)."""
        own = [n for n in cls.__annotations__ if n in cls.model_fields]
        parts = [n for base in cls.__bases__ if issubclass(base, BaseModel) for n in base.model_fields]
        return [
            n
            for n in (*own, *parts)
            if n not in ("agents", "membership", "workspaces_missing", "layers", "stream")
        ]


class FrameLog:
    """``frames.jsonl``, written through: each batch of records reaches the OS before the frames
    it describes are sent, so a killed relay leaves a log complete to its last accepted frame."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)

    def write(self, records: list[FrameRecord]) -> None:
        """Append one batch, whole or not at all: when the disk refuses part of it (full,
        unwritable) the log is cut back to the batch before and the ``OSError`` is raised."""
        if not records:
            return
        data = memoryview(b"".join(r.to_json() + b"\n" for r in records))
        start = os.lseek(self._fd, 0, os.SEEK_END)
        try:
            while data:
                data = data[os.write(self._fd, data) :]  # a full disk may take part of a write
        except OSError:
            os.ftruncate(self._fd, start)
            raise

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def read_log(path: Path) -> list[FrameRecord]:
    return [RECORD.validate_json(line) for line in path.read_bytes().splitlines() if line]


def fold_log(path: Path) -> Totals:
    """The counters of a frame log, folded with the relay's own :meth:`Totals.add`."""
    totals = Totals()
    for record in read_log(path):
        totals.add(record)
    return totals


def totals_from_log(path: Path) -> dict[str, int]:
    """Recompute the counters from a frame log (for audits and tests)."""
    totals = fold_log(path)
    return {k: getattr(totals, k) for k in Totals.COUNTERS if k != "frames"}
