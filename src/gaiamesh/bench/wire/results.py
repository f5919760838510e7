"""What ``bench-wire`` sends and records: the payloads, one block's measures (a side of a protocol
at a number of peers in one round), and the summary row a protocol and peer count gets."""

from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict

from ...mesh.protocols.base import canonical_json
from ..tls.results import LoadRecord, Ratio

# The frames' sizes, bytes of the packet's JSON, a fixed list cycled request by request: a
# sub-task or ack (~400 B), a tool's typical answer (~1.5 KB) and a document chunk (~6 KB), the
# span a replayed run's frames cover. Fixed, not read from a run's log: the same bench on every
# machine, with nothing to replay first.
SIZES = (400, 1500, 6000)


def payload(size: int, index: int) -> bytes:
    """A packet-shaped JSON object of ``size`` bytes (the padding makes up the rest)."""
    head = {"type": "events", "run_id": "bench-wire", "src": "relay", "seq": index, "payload": {"text": ""}}
    pad = max(0, size - len(canonical_json(head)))
    body = {**head, "payload": {"text": "x" * pad}}
    return canonical_json(body)


def sizes_label() -> str:
    return ", ".join(f"{s:,} B" for s in SIZES)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Block(_Model):
    """One side of one protocol at ``peers`` concurrent peers, in one round."""

    protocol: str
    side: str  # floor | ours
    peers: int
    round: int
    warmup: bool
    requests: int  # the bench's requests (frames sent)
    errors: int  # requests that failed (the first one's words in ``error``)
    error: str = ""
    ms: list[float]  # each request's time, ms
    seconds: float  # the block's wall time (the requests of every peer)
    client_cpu_ms: float  # the bench process over the requests: the clients, and the tap's counting
    server_cpu_ms: float  # the server process over the requests
    bytes: int  # on the socket (the tap's), both ways, over the requests
    http_requests: int  # HTTP requests the tap saw over the requests
    connections: int  # opened over the clients' whole life (their first request, the requests, close)
    reused: int  # of those, connections that carried more than one HTTP request
    load: LoadRecord

    def per_request(self, total: float) -> float:
        return total / self.requests if self.requests else 0.0


class Row(_Model):
    """One protocol at one peer count: the floor beside ours (medians over the measured rounds)."""

    protocol: str
    peers: int
    floor_ms: float
    ours_ms: float
    ratio: Ratio | None  # ours over floor, each round's median request time, paired by round
    cpu_ratio: Ratio | None  # ours over floor, both sides' CPU per request
    floor_cpu_ms: float  # both sides, per request
    ours_cpu_ms: float
    floor_client_cpu_ms: float  # the bench process (the clients, the tap's counting), per request
    ours_client_cpu_ms: float
    floor_server_cpu_ms: float  # the server process, per request
    ours_server_cpu_ms: float
    floor_bytes: float  # per request
    ours_bytes: float
    floor_conns: float  # connections opened per request
    ours_conns: float
    floor_reused: float  # share of connections that carried more than one request
    ours_reused: float
    errors: int
    note: str = ""


class WireBench(_Model):
    started: str
    seconds: float
    protocols: list[str]
    peers: list[int]
    requests: int  # per peer and block
    rounds: int
    sizes: list[int]
    machine: dict[str, str]
    contended_blocks: int
    # acp's ours runs on ACP_STORE's store (mesh/protocols/acp/store.py); its floor always on
    # acp-sdk's default MemoryStore (create_app with no store).
    acp_store_ours: str = "keyed"
    rows: list[Row]
    blocks: list[Block]

    def dump(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=2) + "\n"
