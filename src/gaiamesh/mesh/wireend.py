"""What happened on the wire, handed back to the caller at a run's end (:class:`WireEnd`), which
finishes the run (``evaluation/finish.py``): how it ended, the counters, each agent's counts, the
line-up's changes, the frame records in memory, the agents' workspaces gathered, what the agents
announced, and the native wire's layers below the packet (:class:`WireLayers`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from ..errors import RunStatus
from .frames import Announcement
from .records import AgentMetrics, FrameRecord, MemberEvent, Totals


@dataclass(slots=True)
class ScoringChoice:
    """How an agent whose tool scores continuations chose among candidates, as it announced
    at the handshake: ``likelihood`` or ``weights``, what one scored passage was measured to
    cost on its backend at start-up (ms; None: not measured), and why."""

    __pydantic_config__ = ConfigDict(extra="forbid")

    choice: str
    passage_ms: float | None = None
    why: str = ""


@dataclass(frozen=True)
class Announced:
    """What the agents announced about their model at the handshake."""

    backends: frozenset[str] = frozenset()  # how they reach the model: ollama | openai
    kinds: frozenset[str] = frozenset()  # base | chat
    schemas: frozenset[str] = frozenset()  # tools whose model output is held to JSON schemas
    scoring: Mapping[str, ScoringChoice] = field(default_factory=dict)  # tool -> its answer choice


@dataclass(frozen=True)
class Ending:
    """How the run ended: its status (``errors.run_status`` names an error's), why, and the
    answer it gave (empty: none)."""

    status: RunStatus
    error: str | None = None
    prediction: str = ""
    made_by: Mapping[str, str] = field(default_factory=dict)


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
    # How the relay's client keeps its connections (``mesh/native/pool.py``): an idle one stays
    # open this long (the agents' servers likewise), and at most this many are open at once.
    keep_alive_s: float | None = None
    pool_connections: int | None = None
    # PROTOCOL=acp: the store of the agents' ACP servers (ACP_STORE, mesh/protocols/acp/store.py;
    # the agents read the run's settings as the relay does).
    acp_store: str | None = None
    # The protocol's own bytes around the packets in the HTTP bodies, both ways: its JSON-RPC,
    # run object, SSE framing or length prefix, and its first requests (card, session, DID
    # document). ``body_*`` less the frames' bytes; set when the run is finished (evaluation/),
    # where both are known. HTTP's own bytes are ``http_*`` less ``body_*``; TCP/IP's below.
    envelope_bytes: int | None = None

    def __add__(self, other: WireLayers) -> WireLayers:
        """The counters summed (the timings are the gateway's, set on the sum)."""
        counted = [f for f, info in WireLayers.model_fields.items() if info.annotation in (int, "int")]
        return WireLayers(**{f: getattr(self, f) + getattr(other, f) for f in counted})


@dataclass(frozen=True)
class WireEnd:
    """What the relay saw of the run, at its end. ``totals`` None: the frame log as written is
    the truth (the relay could not write all of it), so the counters are folded from ``records``."""

    ending: Ending
    routing: str
    totals: Totals | None
    agents: Mapping[str, AgentMetrics]
    membership: list[MemberEvent]
    elapsed_ms: float
    wall_ms: float
    announced: Announced = Announced()
    layers: WireLayers | None = None  # TRANSPORT=native: the wire below the packet, from the tap
    records: list[FrameRecord] = field(default_factory=list)  # frames.jsonl as written, in memory
    workspaces: Mapping[str, Path] = field(default_factory=dict)  # node id -> its workspace of the run
    missing: Mapping[str, str] = field(default_factory=dict)  # node id -> why its workspace is not there
    staging: Path | None = None  # fetched workspaces, to remove once they are in the archive
    storage_error: str | None = None  # why the frame log could not be written (the run ended there)
    external: WireLayers | None = None  # the external agents' wire, from their taps (any transport)


def announced(heard: dict[str, Announcement]) -> Announced:
    """What the agents announced about their model, as ``metrics.json`` reports it."""
    models = [a for a in heard.values() if a.backend]
    return Announced(
        backends=frozenset(a.backend for a in models), kinds=frozenset(a.model_kind for a in models),
        schemas=frozenset(a.tool for a in heard.values() if a.schemas),
        scoring={a.tool: ScoringChoice(a.answer_choice, a.passage_ms, a.answer_choice_why)
                 for a in heard.values() if a.answer_choice},
    )  # fmt: skip
