"""What the relay core returns after each event (:class:`Outcome`: the records to log, the bytes to
send to whom, progress lines, the run's end) and the work it keeps in flight (:class:`Work`).
Plain data, shared by the core (``core.py`` and its layers), the held links of the fault model (``links.py``)
and the transport (``relay.py``), which carries them out: :func:`outgoing` gathers the bytes per
agent, :func:`tell` reports them (:func:`describe` makes a frame's progress line), and
:class:`AgentStatus` says how it sees each agent of the team."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from ..errors import RunStatus
from .frames import Packet
from .records import FrameRecord


@dataclass(frozen=True)
class Send:
    """Write ``blob`` to each agent in ``dst``."""

    dst: tuple[str, ...]
    blob: bytes


@dataclass(frozen=True)
class RunEnd:
    status: RunStatus
    error: str | None = None


@dataclass
class Outcome:
    """What the transport must do after one event, in order: log, send, report, maybe stop.

    ``notes`` are progress lines for events that are not frames (an agent lost, the end);
    the transport describes frames from their records, and only when someone reads it."""

    records: list[FrameRecord] = field(default_factory=list)
    sends: list[Send] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    end: RunEnd | None = None
    wake_at: float | None = None  # call :meth:`RelayCore.tick` at this time (a grace running out)


@dataclass
class Work:
    """A packet delivered to an agent that consumes it, not yet answered."""

    blob: bytes
    packet: Packet
    header: int


@dataclass(frozen=True)
class AgentStatus:
    """One agent of the run's team as the relay sees it (for the live view)."""

    node_id: str
    tool: str
    state: Literal["connected", "unreachable", "lost"]
    reason: str | None = None


Team = tuple[AgentStatus, ...]
# Each frame record, each progress note, and the team whenever an agent joins or is lost.
Observer = Callable[[FrameRecord | str | Team], None]


def describe(r: FrameRecord) -> str:
    """One progress line for a frame the relay handled."""
    at = f"[{r.t_ms / 1000:7.2f}s]"
    if r.status == "rejected":
        return f"{at} REJECTED frame from agent {r.src}: {r.error}"
    if r.status == "redelivered":
        return f"{at} redelivered {r.type} to {','.join(r.dst) or '-'}"
    if r.status == "dropped_fault":
        return f"{at} LOST {r.type} on the way to {','.join(r.dst)} (network faults; redelivered later)"
    return f"{at} {r.type:<10} {r.src} -> {','.join(r.dst) or '-'} ({r.size} B, {'?' if r.token_used is None else r.token_used} tokens)"


def outgoing(outcomes: list[Outcome]) -> dict[str, list[bytes]]:
    """The bytes the outcomes send, per agent, in order: one socket write each."""
    out: dict[str, list[bytes]] = {}
    for outcome in outcomes:
        for send in outcome.sends:
            for node_id in send.dst:
                out.setdefault(node_id, []).append(send.blob)
    return out


def tell(outcomes: list[Outcome], observer: Observer | None, report: Callable[[str], None] | None) -> None:
    """Hand the outcomes' records and notes to the live view (``observer``), then as progress
    lines to ``report`` (None: quiet)."""
    if observer is not None:
        for outcome in outcomes:
            for record in outcome.records:
                observer(record)
            for note in outcome.notes:
                observer(note)
    if report is not None:
        for outcome in outcomes:
            for record in outcome.records:
                report(describe(record))
            for note in outcome.notes:
                report(note)
