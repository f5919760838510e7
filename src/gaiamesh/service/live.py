"""What the service holds in memory of its runs: each run it knows (:class:`LiveRun`: its
request, its events, its relay while it runs), each live reader of a run's events
(:class:`Subscriber`), and what a restart did with the runs left unfinished (:class:`Recovered`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..mesh.relay import MeshNetwork
from ..settings import Settings
from ..tasks import Task
from .models import RunEvent

EVENT_BACKLOG = 1000  # events a subscriber may fall behind by before it is dropped


class Subscriber:
    """One live reader of a run's events: the backlog first, then new events as they come.
    A reader that falls ``EVENT_BACKLOG`` events behind is dropped, never the run."""

    def __init__(self, backlog: list[RunEvent], closed: bool) -> None:
        self.queue: asyncio.Queue[RunEvent | None] = asyncio.Queue(maxsize=EVENT_BACKLOG + len(backlog) + 1)
        self.dropped = False
        for event in backlog:
            self.queue.put_nowait(event)
        if closed:
            self.queue.put_nowait(None)

    def push(self, event: RunEvent | None) -> bool:
        try:
            self.queue.put_nowait(event)
        except asyncio.QueueFull:
            self.dropped = True
            return False
        return True


@dataclass
class Recovered:
    """What :meth:`RunManager.recover` did with the runs a stopped service left unfinished."""

    resumed: list[tuple[str, str | None]] = field(default_factory=list)  # (run id, session id), queued again
    interrupted: list[str] = field(default_factory=list)


@dataclass
class LiveRun:
    """A run this process knows in memory: its request, its events, its relay while it runs."""

    id: str
    session_id: str | None
    task: Task
    settings: Settings
    out: Path
    events: list[RunEvent] = field(default_factory=list)
    subscribers: set[Subscriber] = field(default_factory=set)
    closed: bool = False
    net: MeshNetwork | None = None
    cancelled: bool = False
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    answered: str | None = None  # the question as the mesh answered it (a follow-up, resolved)

    def publish(self, make: Callable[[int], RunEvent]) -> None:
        event = make(len(self.events))
        self.events.append(event)
        for sub in list(self.subscribers):
            if not sub.push(event):
                self.subscribers.discard(sub)

    def close(self) -> None:
        self.closed = True
        for sub in self.subscribers:
            sub.push(None)
        self.subscribers.clear()
