"""Following the orchestrator's journal: pieces of lines, bad lines, a file that grows while
the run is in flight, and nothing left unread at the end."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from gaiamesh.service.journals import JournalTail, follow, read_all


def line(**entry: Any) -> bytes:
    return json.dumps(entry).encode() + b"\n"


def test_lines_split_across_reads_come_out_whole() -> None:
    tail = JournalTail()
    data = line(event="attempt_started", attempt=1) + line(event="step_started", step="a")
    assert tail.feed(data[:10]) == []
    assert tail.feed(data[10:-3]) == [{"event": "attempt_started", "attempt": 1}]
    assert tail.feed(data[-3:]) == [{"event": "step_started", "step": "a"}]
    assert tail.offset == len(data)


def test_a_bad_line_is_reported_not_dropped() -> None:
    out = JournalTail().feed(b"not json\n[1, 2]\n" + line(event="task_completed"))
    assert [e["event"] for e in out] == ["unreadable", "unreadable", "task_completed"]
    assert "not JSON" in out[0]["error"] and out[1]["error"] == "not an object"


def test_read_continues_where_it_stopped(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    tail = JournalTail()
    assert tail.read(path) == []  # not written yet
    path.write_bytes(line(event="plan_chosen"))
    assert tail.read(path) == [{"event": "plan_chosen"}]
    assert tail.read(path) == []
    with path.open("ab") as f:
        f.write(line(event="step_started"))
    assert tail.read(path) == [{"event": "step_started"}]
    assert [e["event"] for e in read_all(path)] == ["plan_chosen", "step_started"]


async def test_follow_publishes_while_the_file_grows_and_drains_at_the_end(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    seen: list[tuple[str, str]] = []
    first = asyncio.Event()

    def publish(node: str, entry: dict[str, Any]) -> None:
        seen.append((node, entry["event"]))
        first.set()

    done = asyncio.Event()
    async with asyncio.TaskGroup() as tasks:
        tasks.create_task(follow({"8": path}, publish, done))
        path.write_bytes(line(event="attempt_started"))
        await asyncio.wait_for(first.wait(), 5)  # seen while the run is still in flight
        with path.open("ab") as f:
            f.write(line(event="task_completed"))
        done.set()  # the run ends right after its last line: the follower still reads it
    assert seen == [("8", "attempt_started"), ("8", "task_completed")]
