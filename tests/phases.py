"""Where the suite's time goes: the wall time of each phase (a folder of tests/), printed at the
end of every run and written to build/test-times.json, beside the lint time `make test` measured
before pytest (GAIAMESH_LINT_S). Phases run in the order of :data:`ORDER`, each folder whole, so
that a phase's time is the span from its first test's start to the next phase's (its fixtures'
start-up and, for package-scoped ones, their removal included)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

ORDER = ("unit", "model", "e2e", "api", "browser", "integration", "swarm")
OUT = Path(__file__).resolve().parent.parent / "build" / "test-times.json"


def phase_of(item: pytest.Item) -> str:
    parts = Path(str(item.fspath)).parts
    return parts[parts.index("tests") + 1] if "tests" in parts and parts[-2] != "tests" else "other"


class Phases:
    def __init__(self) -> None:
        self.started: dict[str, float] = {}
        self.counts: dict[str, dict[str, int]] = {}
        self.current: str | None = None
        self.end = 0.0

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        rank = {name: i for i, name in enumerate(ORDER)}
        items.sort(key=lambda it: rank.get(phase_of(it), len(ORDER)))  # stable: files keep their order

    def pytest_runtest_logstart(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        parts = Path(location[0]).parts
        phase = parts[1] if len(parts) > 2 and parts[0] == "tests" else "other"
        if phase != self.current:
            self.current = phase
            self.started.setdefault(phase, time.monotonic())

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if log := os.environ.get("GAIAMESH_TEST_LOG"):  # each step's time as it ends, for a run being watched
            with open(log, "a") as f:
                f.write(f"{report.duration:9.2f} {report.when:<8} {report.outcome:<7} {report.nodeid}\n")
        parts = Path(report.location[0]).parts
        phase = parts[1] if len(parts) > 2 and parts[0] == "tests" else "other"
        counts = self.counts.setdefault(phase, {"passed": 0, "failed": 0, "skipped": 0})
        if report.when == "call" or (report.when == "setup" and not report.passed):
            counts[report.outcome] = counts.get(report.outcome, 0) + 1
        elif report.when == "teardown" and report.failed:
            counts["failed"] += 1

    def pytest_sessionfinish(self) -> None:
        self.end = time.monotonic()

    def spans(self) -> list[tuple[str, float]]:
        ordered = sorted(self.started.items(), key=lambda kv: kv[1])
        ends = [t for _, t in ordered[1:]] + [self.end or time.monotonic()]
        return [(name, end - start) for (name, start), end in zip(ordered, ends, strict=True)]

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        rows: list[tuple[str, float, str]] = []
        lint = os.environ.get("GAIAMESH_LINT_S")
        if lint:
            rows.append(("lint", float(lint), "ruff, mypy"))
        for name, seconds in self.spans():
            c = self.counts.get(name, {})
            rows.append((name, seconds, f"{c.get('passed', 0)} passed, {c.get('failed', 0)} failed, "
                                        f"{c.get('skipped', 0)} skipped"))  # fmt: skip
        if not rows:
            return
        total = sum(s for _, s, _ in rows)
        tr = terminalreporter
        tr.section("time per phase")
        tr.write_line(f"{'phase':<12} {'time':>9}  tests")
        for name, seconds, what in rows:
            tr.write_line(f"{name:<12} {_mmss(seconds):>9}  {what}")
        tr.write_line(f"{'total':<12} {_mmss(total):>9}")
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps({"phases": {n: round(s, 1) for n, s, _ in rows}, "total_s": round(total, 1)},
                                  indent=2) + "\n")  # fmt: skip


def _mmss(seconds: float) -> str:
    return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(Phases(), "gaiamesh-phases")
