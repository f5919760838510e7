"""One matrix column's cells (a protocol under one transport and transport security), each
judged against the calm run of the same column, and the relay's frame log as the judge reads it."""

from __future__ import annotations

import json
from pathlib import Path

from ...errors import RunStatus
from ...evaluation.audit import audit
from ...evaluation.metrics import RunMetrics
from .judge import AttackRow, Line, Outcome


class Cells:
    """The cells of one protocol under one transport security, judged against its calm run."""

    def __init__(self, protocol: str, transport: str, security: str, calm: RunMetrics) -> None:
        self.protocol, self.transport, self.security = protocol, transport, security
        self.calm, self.rows = calm, list[AttackRow]()

    def add(self, attack: str, outcome: Outcome, evidence: str, run: tuple[RunMetrics, Path] | None = None,
            frames_lost: int = 0) -> AttackRow:  # fmt: skip
        m, run_dir = run if run is not None else (None, None)
        row = AttackRow(
            protocol=self.protocol, transport=self.transport, security=self.security, attack=attack, outcome=outcome, evidence=evidence,
            frames_lost=frames_lost,
            answer_changed=m is not None and m.status == RunStatus.OK == self.calm.status and m.prediction != self.calm.prediction,
            status="" if m is None else m.status, calm_status=self.calm.status,
            bytes_delta=0 if m is None else m.bytes_tx + m.bytes_rx - self.calm.bytes_tx - self.calm.bytes_rx,
            audit_ok=None if run_dir is None else all(a == b for _, a, b in audit(run_dir)),
        )  # fmt: skip
        self.rows.append(row)
        return row


def lines_of(run_dir: Path) -> list[Line]:
    return [Line.of(json.loads(raw)) for raw in (run_dir / "frames.jsonl").read_text().splitlines() if raw]


