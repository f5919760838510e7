"""A stream's storm on real processes standing in for its agents: it kills workers only (never the
coordinator, which holds the stream), from the first item sent (the frame log's first sub-task),
stops when the relay exits, and reports each kill."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from gaiamesh.bench.storms.failstorm import Storm
from gaiamesh.bench.storms.stream import StreamStorm, items_flow
from gaiamesh.bench.stream.run import StreamOptions, stream_settings
from gaiamesh.deploy.local import ProcessGroup
from gaiamesh.settings import Settings

SUBTASK = '{"seq": 2, "status": "delivered", "type": "subtask", "src": "0", "dst": "1"}\n'


def sleeper(seconds: float) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", str(seconds)])


def test_the_storm_kills_workers_only_and_ends_with_the_relay(tmp_path: Path) -> None:
    settings = stream_settings(Settings(), StreamOptions(tasks="q.jsonl", workers=3), 41000, tmp_path / "ws")
    group = ProcessGroup(tmp_path / "logs")
    group.procs = {f"agent-{n}": sleeper(60) for n in ("0", "1", "2", "3")}
    relay = sleeper(1.5)
    frames = tmp_path / "frames.jsonl"
    frames.write_text(SUBTASK)  # items flow from the start
    storm = StreamStorm(Storm(kill=1, every=0.1, seed=2), down=60.0, frames=frames)  # no restart comes before the end
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


def test_no_kill_comes_before_the_first_item_is_sent(tmp_path: Path) -> None:
    settings = stream_settings(Settings(), StreamOptions(tasks="q.jsonl", workers=2), 41000, tmp_path / "ws")
    group = ProcessGroup(tmp_path / "logs")
    group.procs = {f"agent-{n}": sleeper(60) for n in ("0", "1", "2")}
    frames = tmp_path / "frames.jsonl"
    frames.write_text('{"seq": 1, "status": "delivered", "type": "doc_init", "src": "network", "dst": "0"}\n{"seq"')
    relay = sleeper(1.0)  # a team still starting when the run ends: no item ever sent
    storm = StreamStorm(Storm(kill=1, every=0.1, seed=2), down=60.0, frames=frames)
    try:
        storm(group, settings, relay)
        assert storm.report().kills == [] and all(p.poll() is None for p in group.procs.values())
    finally:
        group.stop_all()


def test_items_flow_once_the_frame_log_holds_a_subtask(tmp_path: Path) -> None:
    frames = tmp_path / "frames.jsonl"
    assert not items_flow(frames)  # no log yet
    frames.write_text('{"seq": 1, "status": "delivered", "type": "doc_init"}\n{"seq": 2, "ty')  # a line half written
    assert not items_flow(frames)
    frames.write_text(frames.read_text() + 'pe": "subtask"}\n')
    assert items_flow(frames)
