"""A stream's storm on real processes standing in for its agents: it kills workers only (never the
coordinator, which holds the stream), stops when the relay exits, and reports each kill."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from gaiamesh.bench.failstorm import Storm
from gaiamesh.bench.stream import StreamOptions, stream_settings
from gaiamesh.bench.streamstorm import StreamStorm
from gaiamesh.deploy.local import ProcessGroup
from gaiamesh.settings import Settings


def sleeper(seconds: float) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", str(seconds)])


def test_the_storm_kills_workers_only_and_ends_with_the_relay(tmp_path: Path) -> None:
    settings = stream_settings(Settings(), StreamOptions(tasks="q.jsonl", workers=3), 41000, tmp_path / "ws")
    group = ProcessGroup(tmp_path / "logs")
    group.procs = {f"agent-{n}": sleeper(60) for n in ("0", "1", "2", "3")}
    relay = sleeper(1.5)
    storm = StreamStorm(Storm(kill=1, every=0.1, seed=2), down=60.0)  # no restart comes before the end
    try:
        began = time.monotonic()
        storm(group, settings, relay)
        took = time.monotonic() - began
        report = storm.report()
        assert relay.returncode == 0 and took < 10 and storm.relay_cpu_s is not None  # it returned when the relay ended, not after the restarts
        assert sorted(k.node for k in report.kills) == ["1", "2", "3"]  # each worker once, then none was left
        assert group.procs["agent-0"].poll() is None  # the coordinator still runs
        assert all(group.procs[f"agent-{n}"].wait(5) == -9 for n in ("1", "2", "3"))  # SIGKILL
        assert all(k.restarted is None for k in report.kills) and report.every_s == 0.1 and report.down_s == 60.0
    finally:
        group.stop_all()
