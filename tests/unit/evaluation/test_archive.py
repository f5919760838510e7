"""The run's archive (evaluation/archive.py): a file pinned as read is stored as read, whatever an
agent still at work wrote since, so the archive and the metrics agree."""

from __future__ import annotations

import tarfile
from pathlib import Path

from gaiamesh.evaluation.archive import write_archive
from gaiamesh.evaluation.modeltime import archived_memories, memory_bytes, parse_memories


def test_pinned_memory_is_archived_as_read_and_a_missing_one_stays_out(tmp_path: Path) -> None:
    a, b = tmp_path / "ws" / "0", tmp_path / "ws" / "1"
    a.mkdir(parents=True)
    b.mkdir()
    (a / "memory.json").write_text('{"steps": [1]}')
    (a / "agent.log").write_text("line\n")
    raw = memory_bytes({"0": a, "1": b})
    assert parse_memories(raw) == {"0": {"steps": [1]}}
    # the agents go on writing after the read: 0 rewrites its memory, 1 writes its first
    (a / "memory.json").write_text('{"steps": [1, 2]}')
    (b / "memory.json").write_text('{"steps": [9]}')
    (b / "memory.json.tmp").write_text('{"ste')  # an atomic write under way
    target = write_archive(tmp_path / "run.tar.gz", {"0": a, "1": b}, [], pinned=raw)
    assert archived_memories(target) == {"0": {"steps": [1]}}
    with tarfile.open(target) as tar:
        names = set(tar.getnames())
    assert "workspaces/0/agent.log" in names and not any(n.endswith(".tmp") for n in names)
