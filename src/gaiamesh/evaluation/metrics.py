"""``metrics.json``'s schema (:class:`RunMetrics`, written by one step: ``evaluation/finish.py``),
and the frame log read back for audits (``frames.jsonl``: the relay's records, ``mesh/records.py``).

A run's counters (``bytes_tx``, ``pkt_cnt``, ...) are :class:`~gaiamesh.mesh.records.Totals`,
folded from the frame records by the same :meth:`Totals.add` whether the relay counts them as it
runs or ``gaiamesh audit`` re-reads ``frames.jsonl``; their definitions are there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import RunStatus
from ..mesh.records import RECORD, AgentMetrics, FrameRecord, MemberEvent, Totals
from ..mesh.wireend import ScoringChoice, WireLayers


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
    written by one step (``evaluation/finish.py``). Its parts are typed where they are
    computed (:class:`Scores`, :class:`WireCost`, :class:`Totals`' counters); a key it does not
    know is an error, never dropped."""

    model_config = ConfigDict(extra="forbid")

    status: RunStatus
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
    # The wire of the agents written by someone else (AGENTS' a2a+http://, mcp+http:// entries),
    # counted at the relay's tap in front of each, any TRANSPORT; absent from runs without one
    external_layers: Annotated[WireLayers | None, Field(exclude_if=lambda v: v is None)] = None
    # A stream's figures (strategy `stream`: its coordinator's summary of every item's fate);
    # absent from every other run's metrics.json
    stream: Annotated[StreamSummary | None, Field(exclude_if=lambda v: v is None)] = None

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
            if n not in ("agents", "membership", "workspaces_missing", "layers", "external_layers", "stream")
        ]


def read_log(path: Path) -> list[FrameRecord]:
    """The records of a frame log, in order."""
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
