"""Streams on demand (``POST /api/streams``): one at a time, each ``gaiamesh stream`` run as a
child process of the service, writing into ``OUT_DIR/streams/<id>/``.

The stream's team (a coordinator and N workers), its relay and, when none answers at
``OLLAMA_HOST``, the model server are local processes on 127.0.0.1 beside the service (in compose:
inside the network container), with a new mesh token; the service's long-lived agents are not
used. The service reaches the stream through its command and its files, not by importing it: the
stream's code is in the bench room, above the service (docs/architecture.md). The child runs in a
process group of its own, so stopping the service stops the whole stream, every process it
started, and nothing else.

A stream's state is its folder: ``request.json`` when it is accepted, ``stream.json`` (the
report) when it is done, ``error.txt`` when it failed; a folder with neither and no stream of
this process behind it was cut off by a stop (``interrupted``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import signal
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from ..agents.teams import lineup
from ..deploy.local import child_env
from ..deploy.memory import room_for
from ..errors import Busy, Conflict, Invalid, NoSpace, NotFound, Stopping
from ..evaluation.streams import FateLine, StreamReport, progress_of
from ..mesh import native
from ..mesh.discovery import missing_team, present
from ..mesh.protocols import check
from ..settings import PathSettings, Settings
from .models import StreamRecord, StreamRequest, StreamState, StreamView

log = logging.getLogger("gaiamesh.service")

REQUEST, REPORT, ERROR, ITEMS = "request.json", "stream.json", "error.txt", "items.csv"
ITEMS_JSONL = "items.jsonl"  # the coordinator's, in its workspace: each item's fate as it ends
OUTPUT, ERRORS = "stream.log", "stream.err"  # the child's standard output and error
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
_ID = re.compile(r"[0-9a-f]{16}")
ERROR_CHARS = 4000  # of the child's standard error kept in error.txt (its last words say why)
STOPPED = "the service stopped while this stream was running"
KILLED_WITHIN_S = 5.0  # the longest the killed processes of a stream's group are waited for


# --- pure parts: names, folders, states ----------------------------------------------------------
def resolve_tasks(name: str, paths: PathSettings) -> Path:
    """The file or folder a stream's ``tasks`` name stands for: a bundled stream set
    (``STREAM_TASKS_DIR/NAME.jsonl``), or a task folder or task-set file in ``TASKS_DIR`` (as a
    run's task is found there). A name is never a path: a separator or ``..`` is
    :class:`Invalid`, an unknown name :class:`NotFound`."""
    if not _NAME.fullmatch(name) or ".." in name:
        raise Invalid(
            f"'tasks' is a name, not a path: {name!r} (letters, digits, '.', '_' and '-'; no '/' or '..'); "
            f"name a bundled stream set ({', '.join(stream_sets(paths)) or 'none here'}) or a task folder or set "
            f"in TASKS_DIR"
        )
    streams, tasks = Path(paths.stream_tasks_dir), Path(paths.tasks_dir)
    for candidate in (streams / f"{name}.jsonl", streams / name, tasks / name, tasks / f"{name}.jsonl"):
        if candidate.is_dir() or (candidate.is_file() and candidate.suffix == ".jsonl"):
            return candidate.resolve()
    raise NotFound(
        f"no stream set or task set named {name!r}: the bundled stream sets are "
        f"{', '.join(stream_sets(paths)) or 'none'} ({streams}); task folders and sets are looked for in {tasks}"
    )


def stream_sets(paths: PathSettings) -> list[str]:
    """The bundled stream sets' names (``STREAM_TASKS_DIR/*.jsonl``)."""
    folder = Path(paths.stream_tasks_dir)
    return sorted(p.stem for p in folder.glob("*.jsonl")) if folder.is_dir() else []


def folder_state(folder: Path) -> StreamState:
    """A stream's state as its folder says it, for a stream no running stream of this process
    stands behind: the report means done, an error failed, neither a stop cut it off."""
    if (folder / REPORT).is_file():
        return StreamState.DONE
    if (folder / ERROR).is_file():
        return StreamState.FAILED
    return StreamState.INTERRUPTED


def read_view(folder: Path, live: StreamState | None = None) -> StreamView:
    """A stream as the API shows it, from its folder; ``live``: the state of the stream this
    process is running (its folder does not say it yet)."""
    record = StreamRecord.model_validate_json((folder / REQUEST).read_text(encoding="utf-8"))
    state = live or folder_state(folder)
    view = StreamView(id=record.id, state=state, request=record.request, created=record.created)
    if state is StreamState.DONE:
        report = folder / REPORT
        view.report = StreamReport.model_validate_json(report.read_text(encoding="utf-8"))
        view.ended = report.stat().st_mtime
    elif state is StreamState.FAILED:
        error = folder / ERROR
        view.error = error.read_text(encoding="utf-8").strip()
        view.ended = error.stat().st_mtime
    elif state is StreamState.INTERRUPTED:
        view.error = STOPPED
    return view


def failure(code: int, stderr: str) -> str:
    """What ``error.txt`` says of a stream that ended without its report: the command's own last
    words (its error's kind and message, ``gaiamesh.cli``), or its exit code when it said none."""
    said = stderr.strip()[-ERROR_CHARS:]
    return said or f"gaiamesh stream exited with code {code} without writing {REPORT} (see {OUTPUT})"


def stream_argv(
    request: StreamRequest, source: Path, out: Path, protocol: str, replay: Path | None
) -> list[str]:
    """The ``gaiamesh stream`` command that runs ``request`` into ``out``."""
    argv = [sys.executable, "-m", "gaiamesh", "stream", "--tasks", str(source), "--team", request.team,
            "--protocols", protocol, "--limit", str(request.limit), "--policy", request.policy,
            "--per-worker", str(request.per_worker), "--out", str(out)]  # fmt: skip
    if request.workers:
        argv += ["--workers", str(request.workers)]
    if request.transport is not None:
        argv += ["--transport", request.transport]
    if replay is not None:
        argv += ["--replay", str(replay), "--pace", request.pace]
    return argv


def items_in(source: Path, limit: int) -> int | None:
    """How many items a stream of ``source`` sends (``limit``: the first so many; 0 all), when it
    is a stream set (one item a line); None for a task folder or set, counted as it is read."""
    if source.suffix != ".jsonl" or not source.is_file():
        return None
    with source.open("rb") as f:
        count = sum(1 for line in f if line.strip())
    return min(count, limit) if limit else count


def told_so_far(folder: Path) -> list[FateLine]:
    """The items a running stream's coordinator has told so far: its ``items.jsonl``, in the
    stream's workspaces (a local team's); a line still being written is left for the next read."""
    lines: list[FateLine] = []
    for path in folder.glob(f"workspaces/*/*/{ITEMS_JSONL}"):
        for text in path.read_text(encoding="utf-8", errors="replace").splitlines():
            with contextlib.suppress(ValueError):  # pydantic's ValidationError is a ValueError
                lines.append(FateLine.model_validate_json(text))
    return lines


def write_atomic(path: Path, text: str) -> None:
    """``path`` whole or not at all: a reader never sees half a state file."""
    part = path.with_name(path.name + ".part")
    part.write_text(text, encoding="utf-8")
    part.replace(path)


# --- the manager ---------------------------------------------------------------------------------
@dataclass
class Job:
    """The stream this process runs (at most one)."""

    id: str
    folder: Path
    argv: list[str]
    state: StreamState = StreamState.QUEUED
    proc: asyncio.subprocess.Process | None = None
    total: int | None = None  # the items it will send, when its source says


class StreamManager:
    """Accepts a stream when none runs, runs it as a child process, remembers every stream by
    its folder."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.root = Path(settings.out_dir) / "streams"
        self._next: asyncio.Queue[Job] = asyncio.Queue(maxsize=1)
        self.current: Job | None = None
        self._stopping = False

    # --- accepting -------------------------------------------------------------------------
    def submit(self, request: StreamRequest) -> StreamView:
        """Accept ``request``; raises :class:`~gaiamesh.errors.Refused`: Invalid or NotFound for
        what it names, Conflict for a replay of an unfinished one (whatever else runs: a request
        that cannot run is told so first), Busy while a stream runs, NoSpace when its local team
        would not fit in this container's memory (NoSpace, 507)."""
        if self._stopping:
            raise Stopping("the service is stopping")
        if request.team == "local" and request.workers == 0:
            raise Invalid("workers: at least 1 for a local team (0, every answerer, is for team deployed)")
        if request.team == "deployed" and request.replay_of is not None:
            raise Invalid("replay_of: a deployed team answers with the deployment's own model backend")
        source = resolve_tasks(request.tasks, self.settings)
        protocol = check(request.protocol or self.settings.protocol)
        if (request.transport or self.settings.transport) == "native":
            native.check(protocol, "stream")
        replay = self._replayable(request.replay_of) if request.replay_of is not None else None
        if self.current is not None:
            raise Busy(f"stream {self.current.id} is {self.current.state.value}: one stream runs at a time; "
                       "start this one when it has ended")  # fmt: skip
        if request.team == "local":  # a deployed team's memory is its own engines': nothing read here
            room = room_for(request.workers, self.settings.stream_memory_mib, agent_start=self.settings.agent_start)
            if not room.fits:
                raise NoSpace(room.refusal())
        stream_id = uuid.uuid4().hex[:16]
        folder = self.root / stream_id
        record = StreamRecord(id=stream_id, created=time.time(), request=request)
        try:
            folder.mkdir(parents=True)
            write_atomic(folder / REQUEST, record.model_dump_json(indent=2))
        except OSError as exc:
            raise NoSpace(
                f"the stream cannot be recorded in {self.root}: {exc} (full or unwritable?)"
            ) from exc
        self.current = Job(
            stream_id, folder, stream_argv(request, source, folder.resolve(), protocol, replay),
            total=items_in(source, request.limit),
        )
        self._next.put_nowait(self.current)
        return self.view(stream_id)

    async def check_team(self, request: StreamRequest) -> None:
        """Refuse now (409) a deployed-team stream whose coordinator or answerers are listed in
        AGENTS but not running (the compose profile ``stream`` is off), instead of a stream that
        fails once started."""
        if request.team != "deployed":
            return
        team = lineup(self.settings.model_copy(update={"strategy": "stream"}))
        if not team.agents:
            raise Conflict(f"no agents of a stream's team in AGENTS ({self.settings.agents}): a deployed stream needs "
                           "a coordinator and answerers (the compose profile 'stream')")  # fmt: skip
        if why := missing_team(team, await present(list(team.agents))):
            raise Conflict(why)

    def _replayable(self, stream_id: str) -> Path:
        """The folder of the finished stream ``stream_id`` (its archive holds its model calls)."""
        folder = self._folder(
            stream_id, f"no stream {stream_id!r} to replay: replay_of names a stream of this service"
        )
        state = self.state_of(folder)
        if state is not StreamState.DONE:
            raise Conflict(
                f"stream {stream_id} is {state.value}: only a stream that is done has model calls to replay"
            )
        return folder.resolve()

    # --- running ---------------------------------------------------------------------------
    async def serve(self) -> None:
        """Run accepted streams, one at a time, until cancelled (a cancelled stream's processes
        are stopped before this returns)."""
        while True:
            job = await self._next.get()
            try:
                await self._run(job)
            except Exception as exc:  # noqa: BLE001 (one stream's failure never ends the service's streams)
                log.exception("stream %s failed", job.id)
                self._fail(job, f"the stream could not be run: {exc!r}")
            finally:
                self.current = None

    async def _run(self, job: Job) -> None:
        if self._stopping:
            return  # accepted as the service began to stop: never started, so interrupted
        env = child_env(self.settings)
        with (job.folder / OUTPUT).open("wb") as out, (job.folder / ERRORS).open("wb") as err:
            # a session of its own: the stream's relay, agents and model server share its
            # process group, so one signal stops them all (never the service's own processes)
            job.proc = await asyncio.create_subprocess_exec(
                *job.argv,
                env=env,
                stdout=out,
                stderr=err,
                stdin=asyncio.subprocess.DEVNULL,
                start_new_session=True,
            )
        job.state = StreamState.RUNNING
        try:
            code = await job.proc.wait()
        except asyncio.CancelledError:
            await self._halt(job.proc)
            raise
        if self._stopping or (job.folder / REPORT).is_file():
            return  # done, or cut off by the stop (interrupted): the folder says which
        self._fail(job, failure(code, (job.folder / ERRORS).read_text(encoding="utf-8", errors="replace")))

    def _fail(self, job: Job, text: str) -> None:
        try:
            write_atomic(job.folder / ERROR, text + "\n")
        except OSError:
            log.exception("stream %s: its error could not be written: %s", job.id, text)

    async def _halt(self, proc: asyncio.subprocess.Process, grace: float = 10.0) -> None:
        """Stop the stream's process group: SIGTERM to every process in it, SIGKILL to whatever
        is left after ``grace`` seconds (an agent the command started outlives the command)."""
        _signal_group(proc.pid, signal.SIGTERM)
        for _ in range(int(grace / 0.1)):  # a process group sends no word when its last process ends
            if not _group_alive(proc.pid):
                break
            await asyncio.sleep(0.1)
        _signal_group(proc.pid, signal.SIGKILL)
        await proc.wait()
        # a SIGKILL is sent at once but acted on when the process next runs: on a busy machine
        # the group's last processes end a moment after the command does
        for _ in range(int(KILLED_WITHIN_S / 0.1)):
            if not _group_alive(proc.pid):
                break
            await asyncio.sleep(0.1)

    async def stop(self) -> None:
        """The service is stopping: the stream in flight is stopped and ends ``interrupted``."""
        self._stopping = True
        job = self.current
        if job is not None and job.proc is not None and job.proc.returncode is None:
            await self._halt(job.proc)

    # --- reading ---------------------------------------------------------------------------
    def _folder(self, stream_id: str, missing: str | None = None) -> Path:
        folder = self.root / stream_id
        if not _ID.fullmatch(stream_id) or not (folder / REQUEST).is_file():
            raise NotFound(missing or f"no stream {stream_id!r}")
        return folder

    def state_of(self, folder: Path) -> StreamState:
        job = self.current
        return job.state if job is not None and job.folder == folder else folder_state(folder)

    def view(self, stream_id: str) -> StreamView:
        folder = self._folder(stream_id)
        job = self.current
        if job is None or job.id != stream_id:
            return read_view(folder)
        view = read_view(folder, job.state)
        if job.state is StreamState.RUNNING:
            view.progress = progress_of(told_so_far(folder), job.total)
        return view

    def views(self) -> list[StreamView]:
        """Every stream of this service, newest first."""
        ids = [p.name for p in self.root.iterdir() if (p / REQUEST).is_file()] if self.root.is_dir() else []
        return sorted((self.view(i) for i in ids if _ID.fullmatch(i)), key=lambda v: v.created, reverse=True)

    def items_csv(self, stream_id: str) -> Path:
        path = self._folder(stream_id) / ITEMS
        if not path.is_file():
            raise Conflict(f"stream {stream_id} is {self.view(stream_id).state.value}: it has no {ITEMS}")
        return path


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def _group_alive(pgid: int) -> bool:
    """Whether a process of the group still runs. A killed orphan stays a zombie until an init
    that may never reap it does (a container's PID 1 is often no init), so zombies do not count."""
    proc = Path("/proc")
    if not proc.is_dir():  # no procfs: the kernel's word, zombies included
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        return True
    for stat in proc.glob("[0-9]*/stat"):
        try:
            state, _ppid, group = stat.read_text().rsplit(")", 1)[1].split()[:3]
        except (OSError, IndexError, ValueError):  # gone meanwhile
            continue
        if group == str(pgid) and state != "Z":
            return True
    return False
