"""The relay's counters and its frame log, kept in step so that one can audit the other.

Definitions (also in the README):

- ``bytes_rx``: encoded bytes received from agents (every frame, rejected ones included).
- ``bytes_tx``: encoded bytes sent to agents, each copy counted (doc_init included).
- ``pkt_cnt``: packets the relay accepted: doc_init plus every valid packet from an agent.
- ``header_overhead``: protocol header bytes on the wire: ``header_size`` of each accepted
  packet times the number of times it crossed the wire (once in, plus once per copy out).
- ``token_sum``: sum of ``token_used`` of accepted packets (the model's own counts).
"""

from __future__ import annotations

import base64
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any


@dataclass
class AgentStats:
    node_id: str
    tool: str
    status: str = "registered"  # registered | connected | dead
    pkts_sent: int = 0
    bytes_sent: int = 0
    pkts_received: int = 0
    bytes_received: int = 0
    rejected: int = 0
    token_used: int = 0
    llm_ms: float = 0.0
    note: str = ""


@dataclass
class Counters:
    bytes_tx: int = 0
    bytes_rx: int = 0
    pkt_cnt: int = 0
    header_overhead: int = 0
    token_sum: int = 0
    llm_ms: float = 0.0
    rejected_cnt: int = 0
    agents: dict[str, AgentStats] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["llm_ms"] = round(self.llm_ms, 3)
        data["agents"] = {k: asdict(v) for k, v in self.agents.items()}
        return data


class FrameLog:
    """``frames.jsonl``: one line per frame the relay handled, with the bytes in base64."""

    def __init__(self, path: Path, start: float) -> None:
        self.path = path
        self.start = start
        self.lines = 0
        self._file: IO[str] = path.open("w", encoding="utf-8")

    def record(
        self,
        *,
        src: str,
        dst: list[str],
        blob: bytes,
        received: bool,
        status: str,
        packet: dict[str, Any] | None = None,
        header_size: int = 0,
        error: str | None = None,
    ) -> dict[str, Any]:
        entry = {
            "n": self.lines,
            "t_ms": round((time.monotonic() - self.start) * 1000, 3),
            "src": src,
            "dst": dst,
            "size": len(blob),
            "rx_bytes": len(blob) if received else 0,
            "tx_bytes": len(blob) * len(dst),
            "header_size": header_size,
            "type": packet.get("type") if packet else None,
            "tag": packet.get("tag") if packet else None,
            "token_used": packet.get("token_used", 0) if packet else 0,
            "status": status,
            "error": error,
            "b64": base64.b64encode(blob).decode(),
        }
        self._file.write(json.dumps(entry) + "\n")
        self._file.flush()
        self.lines += 1
        return entry

    def close(self) -> None:
        self._file.close()


def totals_from_log(path: Path) -> dict[str, int]:
    """Recompute the counters from a frame log (for audits and tests)."""
    t = {"bytes_rx": 0, "bytes_tx": 0, "pkt_cnt": 0, "header_overhead": 0, "token_sum": 0, "rejected_cnt": 0}
    for line in path.read_text(encoding="utf-8").splitlines():
        e = json.loads(line)
        t["bytes_rx"] += e["rx_bytes"]
        t["bytes_tx"] += e["tx_bytes"]
        if e["status"] == "rejected":
            t["rejected_cnt"] += 1
            continue
        t["pkt_cnt"] += 1
        if e["status"] != "redelivered":  # a redelivery repeats a packet whose tokens were counted
            t["token_sum"] += e["token_used"]
        t["header_overhead"] += e["header_size"] * ((1 if e["rx_bytes"] else 0) + len(e["dst"]))
    return t


def audit(run_dir: Path) -> list[tuple[str, object, object]]:
    """Compare ``metrics.json`` with the totals recomputed from ``frames.jsonl``.

    Returns ``(counter, in metrics.json, from the frame log)`` for every counter; equal pairs
    mean the run's numbers are consistent with the frames it actually carried.
    """
    metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
    totals = totals_from_log(run_dir / "frames.jsonl")
    rows: list[tuple[str, object, object]] = [(k, metrics.get(k), v) for k, v in totals.items()]
    lines = len((run_dir / "frames.jsonl").read_text(encoding="utf-8").splitlines())
    rows.append(("frames", metrics.get("frames"), lines))
    return rows
