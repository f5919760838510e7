"""Where the suite's time goes: for each phase (a folder of tests/), the wall time from its first
test's start to its last test's end, and the time its tests took (their setup, call and
teardown added up: more than the wall time when two workers ran them at once), printed at the
end of every run and written to build/test-times.json, beside the lint time `make test`
measured before pytest (GAIAMESH_LINT_S)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from .parallel import phase_of, worker

OUT = Path(__file__).resolve().parent.parent / "build" / "test-times.json"


class Phases:
    def __init__(self) -> None:
        self.began = time.monotonic()
        self.first: dict[str, float] = {}
        self.last: dict[str, float] = {}
        self.busy: dict[str, float] = {}
        self.counts: dict[str, dict[str, int]] = {}

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self.first.setdefault(phase_of(nodeid), time.monotonic())

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if log := os.environ.get("GAIAMESH_TEST_LOG"):  # each step's time as it ends, for a run being watched
            node = getattr(report, "node", None)  # xdist's worker that ran it (None: pytest alone)
            worker = node.gateway.id if node is not None else "-"
            with open(log, "a") as f:  # its start (epoch s) and worker: what ran beside it
                f.write(f"{report.start:.1f} {worker} {report.duration:9.2f} {report.when:<8} {report.outcome:<7} {report.nodeid}\n")
        phase = phase_of(report.nodeid)
        self.last[phase] = time.monotonic()
        self.busy[phase] = self.busy.get(phase, 0.0) + report.duration
        counts = self.counts.setdefault(phase, {"passed": 0, "failed": 0, "skipped": 0})
        if report.when == "call" or (report.when == "setup" and not report.passed):
            counts[report.outcome] = counts.get(report.outcome, 0) + 1
        elif report.when == "teardown" and report.failed:
            counts["failed"] += 1

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        rows: list[tuple[str, float, float, str]] = []
        lint = os.environ.get("GAIAMESH_LINT_S")
        if lint:
            rows.append(("lint", float(lint), float(lint), "ruff, mypy"))
        for name in sorted(self.first, key=self.first.__getitem__):
            c = self.counts.get(name, {})
            rows.append((name, self.last.get(name, self.first[name]) - self.first[name], self.busy.get(name, 0.0),
                         f"{c.get('passed', 0)} passed, {c.get('failed', 0)} failed, {c.get('skipped', 0)} skipped"))  # fmt: skip
        if not rows:
            return
        wall = time.monotonic() - self.began + (float(lint) if lint else 0.0)
        tr = terminalreporter
        tr.section("time per phase")
        tr.write_line(f"{'phase':<12} {'wall':>10} {'tests took':>11}  tests")
        for name, span, busy, what in rows:
            tr.write_line(f"{name:<12} {_mmss(span):>10} {_mmss(busy):>11}  {what}")
        tr.write_line(f"{'total':<12} {_mmss(wall):>10}  (lint and pytest, start to end)")
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps({"phases": {n: {"wall_s": round(s, 1), "tests_s": round(b, 1)} for n, s, b, _ in rows},
                                   "total_s": round(wall, 1)}, indent=2) + "\n")  # fmt: skip


def _mmss(seconds: float) -> str:
    return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"


def pytest_configure(config: pytest.Config) -> None:
    if worker(config) is None:  # xdist's controller, or pytest alone: every report reaches it
        config.pluginmanager.register(Phases(), "gaiamesh-phases")
