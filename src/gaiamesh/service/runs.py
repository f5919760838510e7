"""Runs on demand: a bounded queue, up to ``MAX_CONCURRENT_RUNS`` relays at a time, a live
event stream per run that late subscribers replay from the start, and recovery after a restart.

Each run is one :class:`~gaiamesh.mesh.relay.MeshNetwork` over the long-lived agents, writing its
``frames.jsonl``, ``metrics.json`` and archive under ``OUT_DIR/runs/<run_id>/``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import sqlite3
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from ..agents.teams import lineup, settled, team_specs
from ..errors import (
    Busy,
    Conflict,
    NoSpace,
    NotFound,
    Refused,
    RunStatus,
    Stopping,
    StorageError,
)
from ..evaluation.finish import finish_run, logged, run_and_finish
from ..evaluation.metrics import RunMetrics, read_log
from ..mesh import native
from ..mesh.discovery import missing_team, present
from ..mesh.outcome import AgentStatus, Team
from ..mesh.records import FrameRecord
from ..mesh.relay import MeshNetwork
from ..mesh.wireend import Ending
from ..settings import Settings
from ..tasks import Task
from .journals import follow, read_all
from .live import LiveRun, Recovered, Subscriber
from .models import (
    FrameEvent,
    JournalEvent,
    MetricsEvent,
    NoteEvent,
    RunEvent,
    RunOptions,
    RunRequest,
    RunState,
    RunView,
    StateEvent,
    TeamEvent,
)
from .requests import golds, settings_of, task_of
from .store import Store

log = logging.getLogger("gaiamesh.service")
RESUMED = "queued again: the service restarted before this run started"


Finished = Callable[[LiveRun, RunMetrics | None], None]


class RunManager:
    """Accepts, queues, runs, cancels and remembers runs."""

    def __init__(self, settings: Settings, store: Store, on_finished: Finished | None = None) -> None:
        self.settings = settled(settings)  # AGENTS written out once: a run's strategy then picks from it
        self.store = store
        self.on_finished = on_finished
        self.runs_dir = Path(settings.out_dir) / "runs"
        self.live: dict[str, LiveRun] = {}
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._waiting: list[str] = []  # queued run ids, oldest first (queue positions)
        self._stopping = False
        self._started = 0  # runs handed to a relay so far

    # --- accepting -------------------------------------------------------------------------
    def resolve(self, request: RunRequest) -> Task:
        """The task a request names or carries; raises :class:`~gaiamesh.errors.Refused` (NotFound, TooLarge, Invalid, UnknownProtocol)."""
        return task_of(request, self.settings, self.runs_dir)

    async def check_team(self, options: RunOptions) -> None:
        """Refuse now (409) a run whose strategy's agents are listed in AGENTS but not running
        (their compose profile is off), instead of a run that waits for nobody until RUN_TIMEOUT."""
        if (
            options.transport or self.settings.transport
        ) == "native":  # the wire first: a 422 is about the request
            native.check(
                options.protocol or self.settings.protocol, options.strategy or self.settings.strategy
            )
        settings = self.settings.model_copy(update={"strategy": options.strategy or self.settings.strategy})
        team = lineup(settings)
        if team.agents and (why := missing_team(team, await present(list(team.agents)))):
            raise Conflict(why)

    def submit(self, request: RunRequest, session_id: str | None = None) -> RunView:
        """Queue a run; raises :class:`~gaiamesh.errors.Refused` (Busy when the queue is full, Conflict when no agent
        of the asked-for strategy is configured)."""
        task = self.resolve(request)
        if self._stopping:
            raise Stopping("the service is stopping")
        free = shutil.disk_usage(self.settings.out_dir).free
        if free < self.settings.min_free_bytes:
            raise NoSpace(f"the results folder {self.settings.out_dir} has {free} bytes free; a run needs "
                f"MIN_FREE_BYTES={self.settings.min_free_bytes} (full or unwritable?)",
            )  # fmt: skip
        if len(self._waiting) >= self.settings.max_queued_runs:
            raise Busy(
                f"the run queue is full ({self.settings.max_queued_runs} waiting, MAX_QUEUED_RUNS); try again later"
            )
        run_id = uuid.uuid4().hex[:16]
        settings = self._settings_for(request)
        if not team_specs(settings):  # refused now, not failed later inside a worker
            raise Conflict(f"no agents of the {settings.strategy} strategy in AGENTS ({settings.agents}): start its "
                "agents (the compose profile of that strategy) or ask for another strategy",
            )  # fmt: skip
        out = self.runs_dir / run_id
        try:
            self.store.add_run(
                run_id, session_id, request.model_dump(exclude_none=True), task.task_id, task.question
            )
        except sqlite3.Error as exc:
            raise NoSpace(
                f"the run cannot be recorded: {exc} (is {self.settings.out_dir} full or unwritable?)"
            ) from exc
        live = self.live[run_id] = LiveRun(run_id, session_id, task, settings, out)
        live.publish(lambda seq: StateEvent(seq=seq, state=RunState.QUEUED))
        self._waiting.append(run_id)
        self._queue.put_nowait(run_id)
        return self.view(run_id)

    # --- running ---------------------------------------------------------------------------
    async def serve(self) -> None:
        """Run queued runs until cancelled; owns its workers."""
        async with asyncio.TaskGroup() as workers:
            for n in range(self.settings.max_concurrent_runs):
                workers.create_task(self._worker(), name=f"run-worker-{n}")

    async def _worker(self) -> None:
        while True:
            run_id = await self._queue.get()
            if run_id in self._waiting:
                self._waiting.remove(run_id)
            live = self.live.get(run_id)
            if live is None or live.cancelled:
                continue
            try:
                await self._execute(live)
            except Exception:  # noqa: BLE001 (one run's failure, e.g. a store on a full disk, never ends the worker)
                log.exception("run %s could not be recorded", run_id)
                if not live.closed:
                    live.close()
                    live.ended.set()

    async def _execute(self, live: LiveRun) -> None:
        self.store.set_run(live.id, state=RunState.RUNNING.value, started=_now())
        live.publish(lambda seq: StateEvent(seq=seq, state=RunState.RUNNING))

        def observe(item: FrameRecord | str | Team) -> None:
            if isinstance(item, str):
                live.publish(lambda seq: NoteEvent(seq=seq, text=item))
            elif isinstance(item, tuple):
                live.publish(lambda seq: TeamEvent(seq=seq, agents=list(item)))
            else:
                live.publish(lambda seq: FrameEvent.of(seq, item))

        def journal(node_id: str, entry: dict[str, object]) -> None:
            live.publish(lambda seq: JournalEvent(seq=seq, node_id=node_id, entry=entry))

        self._started += 1  # successive runs start `share` at successive replicas of a tool
        live.net = MeshNetwork(live.settings, live.task, live.out, run_id=live.id, quiet=True, observer=observe,
                               share_start=self._started - 1, lineup=lineup(live.settings))  # fmt: skip
        done = asyncio.Event()
        try:
            async with asyncio.TaskGroup() as tasks:
                if journals := self._journals(live.settings, live.id):
                    tasks.create_task(follow(journals, journal, done), name=f"journal-{live.id}")
                try:
                    metrics = await run_and_finish(live.net)
                finally:
                    done.set()  # the follower reads what is left, then ends
            final = live.net.core.final if live.net.core else None
            live.answered = final.payload.question if final else None
        except Exception as exc:  # noqa: BLE001 (a failed run is recorded, never the service's end)
            # The results could not be written (the TaskGroup wraps it): say where and why.
            storage = exc.subgroup(StorageError) if isinstance(exc, ExceptionGroup) else None
            message = "; ".join(map(str, storage.exceptions)) if storage else f"run failed: {exc!r}"
            self._end(live, RunState.FINISHED, None, message)
            return
        state = RunState.INTERRUPTED if metrics.status == RunStatus.INTERRUPTED else (
            RunState.CANCELLED if metrics.status == RunStatus.CANCELLED else RunState.FINISHED
        )  # fmt: skip
        self._end(live, state, metrics, metrics.error)

    def _journals(self, settings: Settings, run_id: str) -> dict[str, Path]:
        """The journals the run's orchestrators write (in their workspaces, which the service
        mounts), by node id."""
        root = Path(settings.workspace_root)
        return {s.node_id: root / s.node_id / run_id / "journal.jsonl" for s in team_specs(settings)
                if s.tool == "orchestrator"}  # fmt: skip

    def _end(self, live: LiveRun, state: RunState, metrics: RunMetrics | None, error: str | None) -> None:
        try:
            self.store.set_run(live.id, state=state.value, finished=_now(), error=error)
        except sqlite3.Error as exc:
            # The store's disk is full: the run's end still reaches its readers.
            error = f"{error + '; ' if error else ''}the end of this run could not be recorded: {exc}"
            log.error("run %s: %s", live.id, error)
        if metrics is not None:
            live.publish(lambda seq: MetricsEvent(seq=seq, metrics=metrics))
        live.publish(lambda seq: StateEvent(seq=seq, state=state, error=error))
        live.close()
        live.net = None
        live.ended.set()
        if self.on_finished is not None:
            self.on_finished(live, metrics)

    def cancel(self, run_id: str) -> RunView:
        """Cancel a queued or running run; a finished one is left as it is (409)."""
        live = self.live.get(run_id)
        if live is None or live.closed:
            raise Conflict(f"run {run_id} is not queued or running")
        live.cancelled = True
        if live.net is not None:
            live.net.cancel("cancelled through the API")
        else:
            if run_id in self._waiting:
                self._waiting.remove(run_id)
            self._end(live, RunState.CANCELLED, None, "cancelled through the API before it started")
        return self.view(run_id)

    @property
    def queued(self) -> int:
        return len(self._waiting)

    async def stop(self, grace: float = 15.0) -> None:
        """The service is stopping: runs in flight end ``interrupted`` and write what they have
        (up to ``grace`` seconds); queued runs stay queued in the store, and :meth:`recover`
        queues them again at the next start."""
        self._stopping = True
        running = [live for live in self.live.values() if live.net is not None]
        for live in running:
            assert live.net is not None
            live.net.cancel("the service stopped", status=RunStatus.INTERRUPTED)
        if running:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(grace):
                    await asyncio.gather(*(live.ended.wait() for live in running))

    # --- reading ---------------------------------------------------------------------------
    def view(self, run_id: str) -> RunView:
        row = self.store.run(run_id)
        if row is None:
            raise NotFound(f"no run {run_id}")
        position = self._waiting.index(run_id) + 1 if run_id in self._waiting else None
        ran = self._settings_for(RunRequest.model_validate_json(row["request"]))
        return RunView(
            id=row["id"], state=RunState(row["state"]), session_id=row["session_id"], task_id=row["task_id"],
            question=row["question"], queue_position=position, created=row["created"], started=row["started"],
            finished=row["finished"], error=row["error"], strategy=ran.strategy, protocol=ran.protocol,
            transport=ran.transport, metrics=self._metrics(run_id),
        )  # fmt: skip

    def _metrics(self, run_id: str) -> RunMetrics | None:
        """The run's ``metrics.json``, the one copy of its metrics (None: the run wrote none)."""
        path = self.runs_dir / run_id / "metrics.json"
        return RunMetrics.read(path) if path.is_file() else None

    def subscribe(self, run_id: str) -> Subscriber:
        """A reader of the run's events from the first one; for a run this process did not see
        (finished before a restart), the events are rebuilt from its frame log and metrics."""
        live = self.live.get(run_id)
        if live is not None:
            sub = Subscriber(list(live.events), live.closed)
            if not live.closed:
                live.subscribers.add(sub)
            return sub
        view = self.view(run_id)
        events: list[RunEvent] = []
        if view.metrics is not None and view.metrics.agents:
            team = [AgentStatus(n, a.tool, "lost" if a.status in ("dead", "left") else "connected")
                    for n, a in view.metrics.agents.items()]  # fmt: skip
            events.append(TeamEvent(seq=0, agents=team))
        log = self.runs_dir / run_id / "frames.jsonl"
        if log.is_file():
            events += [FrameEvent.of(len(events) + i, r) for i, r in enumerate(read_log(log))]
        if view.metrics is not None:
            root = Path(self.settings.workspace_root)
            for node, agent in view.metrics.agents.items():
                if agent.tool == "orchestrator":
                    for entry in read_all(root / node / run_id / "journal.jsonl"):
                        events.append(JournalEvent(seq=len(events), node_id=node, entry=entry))
            events.append(MetricsEvent(seq=len(events), metrics=view.metrics))
        events.append(StateEvent(seq=len(events), state=view.state, error=view.error))
        return Subscriber(events, closed=True)

    def artifacts(self, run_id: str) -> Path:
        view = self.view(run_id)
        path = self.runs_dir / run_id / "run_artifacts.tar.gz"
        if not path.is_file():
            raise Conflict(f"run {run_id} is {view.state.value}: it has no archive yet")
        return path

    # --- after a restart -------------------------------------------------------------------
    def recover(self) -> Recovered:
        """Runs a stopped service left unfinished. One in flight ends ``interrupted`` and keeps
        its frame log, from which it is finished (``evaluation/finish.py``: ``metrics.json``
        counted from the log, and an archive). One still queued had not started: its request is
        in the store, so it is queued again, in its turn, and runs (``interrupted`` only when it
        can no longer be run, e.g. its bundled task is gone)."""
        recovered = Recovered()
        for row in self.store.unfinished_runs():
            if row["state"] == RunState.QUEUED.value:
                why = self._requeue(row)
                if why is None:
                    recovered.resumed.append((row["id"], row["session_id"]))
                    continue
                error = (
                    f"the service stopped while this run was queued, and it could not be queued again: {why}"
                )
            else:
                error = "the service stopped while this run was in flight"
                self._finish_cut(row, error)
            self.store.set_run(row["id"], state=RunState.INTERRUPTED.value, finished=_now(), error=error)
            recovered.interrupted.append(row["id"])
        return recovered

    def _requeue(self, row: sqlite3.Row) -> str | None:
        """Queue the stored run ``row`` again; None, or why it cannot be."""
        try:
            request = RunRequest.model_validate_json(row["request"])
            task = self.resolve(request)
        except (ValidationError, Refused) as exc:
            return str(exc)
        live = self.live[row["id"]] = LiveRun(row["id"], row["session_id"], task, self._settings_for(request),
                                              self.runs_dir / row["id"])  # fmt: skip
        live.publish(lambda seq: StateEvent(seq=seq, state=RunState.QUEUED))
        live.publish(lambda seq: NoteEvent(seq=seq, text=RESUMED))
        self._waiting.append(row["id"])
        self._queue.put_nowait(row["id"])
        return None

    def _finish_cut(self, row: sqlite3.Row, error: str) -> None:
        """A run cut off in flight: its metrics and archive from the frame log it left."""
        out = self.runs_dir / row["id"]
        if (out / "frames.jsonl").is_file():
            request = RunRequest.model_validate_json(row["request"])
            answer, answers = golds(request)
            task = Task(row["task_id"], "", row["question"], answer, out, (), answers)
            finish_run(out, self._settings_for(request), task, Ending(RunStatus.INTERRUPTED, error), run_id=row["id"],
                       records=logged(out))

    def _settings_for(self, request: RunRequest) -> Settings:
        return settings_of(self.settings, request)


def _now() -> float:
    return time.time()
