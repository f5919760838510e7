"""The frame log's records: one :class:`FrameRecord` per frame the relay handled (``frames.jsonl``,
written through by :class:`FrameLog`), each agent's counts, the line-up's changes, and the
counters folded from those records (:class:`Totals`).

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

from pydantic import ConfigDict, Field, TypeAdapter

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
