"""The orchestrator's journal, followed while a run is in flight, for the live page's plan view.

The orchestrator appends one JSON line per event (plan chosen, attempt started with its plan,
step started/completed/failed, replan, outcome) to ``journal.jsonl`` in its workspace, which the
network service mounts read-only. :class:`JournalTail` turns appended bytes into entries (pure,
tested by plain calls); :func:`follow` reads the files as they grow until the run ends, then
once more, so the stream holds every line the orchestrator wrote.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

POLL_S = 0.2  # how often a growing journal is read while the run is in flight
MAX_LINE = 1 << 20  # a line longer than this is reported, not buffered without end


class JournalTail:
    """Complete lines from a file read in pieces; a partial last line waits for its end."""

    def __init__(self) -> None:
        self.offset = 0
        self._partial = b""

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        """The entries completed by ``data`` (a line that is not a JSON object becomes an
        ``unreadable`` entry saying so: the view shows it, nothing is dropped silently)."""
        self.offset += len(data)
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        if len(self._partial) > MAX_LINE:
            lines.append(self._partial)
            self._partial = b""
        entries = []
        for line in filter(None, (x.strip() for x in lines)):
            try:
                entry = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                entry = {"event": "unreadable", "error": f"journal line is not JSON: {exc}"}
            entries.append(entry if isinstance(entry, dict) else {"event": "unreadable", "error": "not an object"})
        return entries

    def read(self, path: Path) -> list[dict[str, Any]]:
        """New entries of ``path`` since the last read (none while it does not exist)."""
        try:
            with path.open("rb") as f:
                f.seek(self.offset)
                return self.feed(f.read())
        except FileNotFoundError:
            return []


def read_all(path: Path) -> list[dict[str, Any]]:
    """Every entry of a finished run's journal."""
    return JournalTail().read(path)


async def follow(
    paths: dict[str, Path], publish: Callable[[str, dict[str, Any]], None], done: asyncio.Event
) -> None:
    """Publish each new entry of each journal (keyed by node id) until ``done`` is set, then
    read what is left once more."""
    tails = {node: JournalTail() for node in paths}

    def drain() -> None:
        for node, path in paths.items():
            for entry in tails[node].read(path):
                publish(node, entry)

    while not done.is_set():
        drain()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), POLL_S)  # the poll interval, or the run's end
    drain()
