"""Session resources shared by every pytest process of one run. `make test` runs the suite in
pytest-xdist workers (tests/parallel.py); a model server, or the suite's live recording, is made
once, by the first process that asks for it, under a file lock, and the others wait for it and
use it. The folder (GAIAMESH_TEST_SHARED) is made by the run's first process (xdist's
controller, or pytest alone), inherited by its workers, and removed with every server in it
when that process ends (:func:`end`)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from gaiamesh.deploy.local import wait_until_answers

ENV = "GAIAMESH_TEST_SHARED"


def begin() -> bool:
    """Make the run's shared folder unless a parent process made it; True when this one did."""
    if os.environ.get(ENV):
        return False
    made = Path(tempfile.mkdtemp(prefix="gaiamesh-tests-"))
    made.chmod(0o755)  # the recording is mounted into containers that run as another user
    os.environ[ENV] = str(made)
    return True


def folder() -> Path:
    return Path(os.environ[ENV])


@contextlib.contextmanager
def _locked(name: str) -> Iterator[Path]:
    with (folder() / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # held while the first process makes it: the others wait here
        try:
            yield folder()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def make(root: Path, *targets: str) -> None:
    """``make TARGETS`` in ``root``, one process of the run at a time: the compose and swarm suites
    both build the images as they start, and two builds at once race (``make dist`` removes and
    rewrites build/dist while the other's image build reads it: a stack that failed to start
    in one run of issue 59's work)."""
    with _locked("make"):
        subprocess.run(["make", *targets], cwd=root, check=True)


def server(name: str, argv: list[str], url: str, ready: str, **env: str) -> str:
    """The URL of the shared server ``name``: started by the first caller with ``argv`` (in a
    session of its own, so that the worker that started it may end before the others do) and
    ready when ``url + ready`` answers 200."""
    with _locked(name) as shared:
        record = shared / f"{name}.json"
        if record.exists():
            known: str = json.loads(record.read_text())["url"]
            return known
        log = shared / f"{name}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                    env={**os.environ, "PYTHONUNBUFFERED": "1", **env})  # fmt: skip
        record.write_text(json.dumps({"url": url, "pid": proc.pid}))

        def alive() -> None:
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited: {log.read_text()[-3000:]}")

        wait_until_answers(url + ready, alive, 180, name)
        return url


def made(name: str, make: Callable[[Path], None]) -> Path:
    """The shared folder ``name``, made by the first caller with ``make(folder)``; a caller whose
    ``make`` failed leaves nothing behind for the next to trust."""
    with _locked(name) as shared:
        out, done = shared / name, shared / f"{name}.done"
        if done.exists():
            return out
        shutil.rmtree(out, ignore_errors=True)
        make(out)
        done.touch()
        return out


def end() -> None:
    """Stop every shared server and remove the folder (the process that made it, at its end)."""
    pids = [json.loads(record.read_text())["pid"] for record in folder().glob("*.json")]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)  # the server and anything it started
    deadline = time.monotonic() + 10
    while (left := [p for p in pids if _alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.1)  # mostly another process's children: nothing to wait on but their /proc entries
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    shutil.rmtree(folder(), ignore_errors=True)
    os.environ.pop(ENV, None)


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a child of this process is reaped here; a zombie is not alive)."""
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False
