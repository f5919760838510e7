"""The relay core's books for one run: the counters, each agent's counts and the changes in the
line-up, and the run's clock. Counters change only in :meth:`Books._log`, which folds each frame
record into the totals with the same :meth:`Totals.add` that ``gaiamesh audit`` uses on
``frames.jsonl``, so each counter equals the sum over the frame log by construction."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .outcome import Outcome
from .records import AgentMetrics, FrameRecord, MemberChange, MemberEvent, Totals


@dataclass
class RunClock:
    """The run's times: ``origin`` (the run's wall start, the origin of frame times) and ``t0``
    (when the document went out: the clock of the run starts)."""

    origin: float
    t0: float | None = None

    @property
    def start(self) -> float:
        return self.t0 if self.t0 is not None else self.origin

    # The fault model's time: seconds since doc_init; and back to the relay's clock.
    def run_s(self, now: float) -> float:
        return now - self.start

    def clock_of(self, t: float) -> float:
        return t + self.start


class Books:
    """What the run counted, and when (times relative to the run clock's ``origin``, the run's
    wall start, and to its ``t0``, when the document went out)."""

    def __init__(self, lineup: Iterable[tuple[str, str]], origin: float) -> None:
        self.totals = Totals()
        self.agents = {n: AgentMetrics(node_id=n, tool=t) for n, t in lineup}
        self.membership: list[MemberEvent] = []  # agents lost, back, joined, let go: metrics.json
        self.run_clock = RunClock(origin)
        self.done_at: float | None = None

    def _member(self, now: float, node_id: str, event: MemberChange) -> None:
        self.membership.append(MemberEvent(round(self._rel(now), 3), node_id, self.agents[node_id].tool, event))

    def _reject(
        self, out: Outcome, src: str, blob: bytes, now: float, error: str, decode_us: float | None = None
    ) -> None:
        self._log(
            out,
            FrameRecord.of(
                n=self.totals.frames, t_ms=self._rel(now), src=src, dst=[], blob=blob, received=True,
                status="rejected", error=error, decode_us=decode_us,
            ),
        )  # fmt: skip

    def _log(self, out: Outcome, record: FrameRecord) -> None:
        # The one place counters change: from the record that goes into frames.jsonl.
        self.totals.add(record, self.agents)
        out.records.append(record)

    def _rel(self, now: float) -> float:
        return (now - self.run_clock.origin) * 1000

    def _ms(self, now: float) -> float:
        return (now - self.run_clock.start) * 1000

    def _s(self, now: float) -> float:
        return self._rel(now) / 1000  # progress lines: same origin as the frame records' t_ms

    def elapsed_ms(self, now: float) -> float:
        """t=0 (doc_init) to the end of the run (or ``now`` while it runs)."""
        end = self.done_at if self.done_at is not None else now
        return (end - self.run_clock.start) * 1000
