"""Agents forked from one warm process instead of each started from nothing (AGENT_START=fork).

An agent's start-up is mostly imports: a pipeline agent spends about 1.8 CPU seconds before it
listens, 0.75 of them importing its tools (BM25, the stemmer, lemminflect's tables). A team of
four paid that four times, a 64-worker stream 64 times. A :class:`Zygote` is one ``python -m
gaiamesh.deploy.zygote`` process per :class:`~gaiamesh.deploy.local.ProcessGroup` that imports
all of it once and forks each agent from there; the agent then runs the same ``gaiamesh agent``
command, in its own environment, working folder and log, as an exec'd one would.

The zygote is single-threaded and has no event loop when it forks (both would be unsafe to
fork). It reads one request per line on stdin and answers on stdout: ``{"pid": N}`` when it has
forked, ``{"exit": N, "code": C}`` when that child has ended (C as Popen's returncode: -signal
when killed). When its stdin closes (its group stopped, or the command that owns it died) it
sends SIGTERM to the children still running and exits. Forked agents are the zygote's children,
so the group sees them through :class:`Forked`, which behaves as the ``Popen`` it replaces."""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import logging
import os
import queue
import runpy
import selectors
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import IO

from ..errors import RunError

log = logging.getLogger(__name__)

# What every agent imports before it listens: the command line, the agent, every tool (and, in
# importing the pipeline's text module, lemminflect's tables and the stemmer); and anyio's asyncio
# backend, which anyio imports when a native server first uses it (Starlette's streamed response,
# the SDKs' task groups): 0.1 s of CPU in each worker's first request, 64 of them at once in a stream.
PRELOAD = ("gaiamesh.cli", "gaiamesh.agents.agent", "gaiamesh.agents.catalog", "gaiamesh.agents.native",
           "anyio._backends._asyncio")  # fmt: skip
START_TIMEOUT_S = 120.0  # the zygote's imports on a busy machine; one fork is milliseconds
STOP_S = 10.0  # what a closed zygote gives its agents after SIGTERM, as ProcessGroup.stop_all does


class Forked:
    """A forked agent as a ``subprocess.Popen`` is used here: pid, returncode, poll, wait, signals."""

    def __init__(self, pid: int, args: list[str]) -> None:
        self.pid = pid
        self.args = args
        self.returncode: int | None = None
        self._ended = threading.Event()

    def ended(self, code: int) -> None:
        self.returncode = code
        self._ended.set()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):  # it ended; its exit line is on its way
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class Zygote:
    """The parent's side: starts the zygote, asks it to fork, and keeps each child's exit."""

    def __init__(self, log: Path, native: list[str] | None = None, trust: str | None = None) -> None:
        self._log = log.open("ab")
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        # native: the protocols whose bindings (their SDKs) the agents build at start, imported
        # once here rather than in each forked agent (a2a-sdk: 0.4 s of CPU each, 64 at once).
        # trust: the agents' SSL_CERT_FILE, which an SDK imported here must see as they would
        # (aiohttp builds its verifying context when imported: mesh/localtls.py, anp's DID host)
        preload = ["--native", ",".join(native)] if native else []
        if trust:
            env["SSL_CERT_FILE"] = trust
        self._proc = subprocess.Popen(  # its command line names the group's logs: ps tells whose agents these are
            [sys.executable, "-m", "gaiamesh.deploy.zygote", "--logs", str(log.parent), *preload],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, env=env,
        )  # fmt: skip
        self._lock = threading.Lock()  # one request and its answer at a time
        self._pids: queue.Queue[int | None] = queue.Queue()
        self._children: dict[int, Forked] = {}
        # The one thread here: it reads the zygote's answers until the zygote exits, and
        # close() joins it.
        self._reader = threading.Thread(target=self._read, name="zygote-reader", daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self._proc.pid

    def fork(self, args: list[str], env: dict[str, str], log: Path) -> Forked:
        """``gaiamesh *args`` forked with ``env``, in this process's working folder, writing to ``log``."""
        request = {"argv": args, "env": env, "log": str(log), "cwd": os.getcwd()}
        with self._lock:
            stdin = self._proc.stdin
            assert stdin is not None
            try:
                stdin.write(json.dumps(request).encode() + b"\n")
                stdin.flush()
                pid = self._pids.get(timeout=START_TIMEOUT_S)
            except (OSError, queue.Empty):  # it died, or never finished its imports
                pid = None
            if pid is None:
                try:  # its end, for the words: it has died, or is stopped here
                    code = self._proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self._proc.kill()
                    code = self._proc.wait()
                raise RunError(f"the agents' zygote did not fork (exit code {code}); its log: {self._log.name}")
            child = self._children[pid]
            child.args = ["gaiamesh", *args]
            return child

    def _read(self) -> None:
        stdout = self._proc.stdout
        assert stdout is not None
        for line in stdout:
            msg = json.loads(line)
            if "pid" in msg:  # always before that child's exit line: the zygote reaps only between requests
                self._children[msg["pid"]] = Forked(msg["pid"], ["gaiamesh"])  # its arguments: fork() sets them
                self._pids.put(msg["pid"])
            elif child := self._children.get(msg["exit"]):
                child.ended(msg["code"])
        self._pids.put(None)  # the zygote is gone: a fork waiting for its answer gets none
        for child in self._children.values():  # it died without telling their ends (killed): nobody could
            if child.returncode is None:
                log.warning("the agents' zygote died; its agent (pid %d) is killed", child.pid)
                child.kill()
                child.ended(-signal.SIGKILL)

    def close(self) -> None:
        """Stop the zygote: it sends SIGTERM to the agents still running, then exits."""
        if self._proc.stdin is not None:
            with contextlib.suppress(OSError):
                self._proc.stdin.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._reader.join(timeout=10)
        self._log.close()


# --- the zygote itself (python -m gaiamesh.deploy.zygote) --------------------------------------


def _serve() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's ^C reaches the agents and the command that stops them
    for name in PRELOAD:
        importlib.import_module(name)
    _preload_native(sys.argv[1:])
    gc.freeze()  # what is imported stays out of the collector's way, so its pages stay shared with each child
    wake_r, wake_w = os.pipe()
    for fd in (wake_r, wake_w):
        os.set_blocking(fd, False)
    signal.set_wakeup_fd(wake_w)  # SIGCHLD wakes the loop below; it reaps there, never in a handler
    signal.signal(signal.SIGCHLD, lambda *_: None)
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # nothing but answers on the answer pipe
    children: set[int] = set()
    with selectors.DefaultSelector() as sel:
        sel.register(0, selectors.EVENT_READ)
        sel.register(wake_r, selectors.EVENT_READ)
        pending = b""
        while True:
            for key, _ in sel.select():
                if key.fd == wake_r:
                    _drain(wake_r)
                    continue
                data = os.read(0, 65536)
                if not data:  # the group closed us, or its command died
                    sel.unregister(0)
                    _end(children, answers, sel, wake_r)
                    return
                pending += data
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    pid = _fork(json.loads(line), (wake_r, wake_w, answers.fileno(), sel.fileno()))
                    children.add(pid)
                    answers.write(json.dumps({"pid": pid}) + "\n")
            _reap(children, answers)


def _end(children: set[int], answers: IO[str], sel: selectors.BaseSelector, wake: int) -> None:
    """SIGTERM to the children still running, SIGKILL to those left after STOP_S; each exit told."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + STOP_S
        while children and (left := deadline - time.monotonic()) > 0:
            if sel.select(left):  # a SIGCHLD on the wakeup pipe
                _drain(wake)
            _reap(children, answers)
        if not children:
            return


def _drain(fd: int) -> None:
    with contextlib.suppress(BlockingIOError):
        os.read(fd, 4096)


def _reap(children: set[int], answers: IO[str]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        children.discard(pid)
        answers.write(json.dumps({"exit": pid, "code": os.waitstatus_to_exitcode(status)}) + "\n")


def _fork(request: dict[str, object], private: tuple[int, ...]) -> int:
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        code = _child(request, private)
    except BaseException:  # noqa: BLE001 - whatever ends the child, it ends here and never returns to the loop
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _child(request: dict[str, object], private: tuple[int, ...]) -> int:
    """Become ``gaiamesh <argv>`` as ``python -m gaiamesh`` would, in the request's environment."""
    signal.set_wakeup_fd(-1)
    for sig, handler in ((signal.SIGCHLD, signal.SIG_DFL), (signal.SIGINT, signal.default_int_handler)):
        signal.signal(sig, handler)
    for fd in private:
        os.close(fd)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    log = os.open(str(request["log"]), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    os.chdir(str(request["cwd"]))
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in dict(request["env"]).items()})  # type: ignore[call-overload]
    sys.argv = ["gaiamesh", *(str(a) for a in request["argv"])]  # type: ignore[attr-defined]
    root = logging.getLogger()  # as a new interpreter has it: absl configured it when rouge_score logged at import
    for old in root.handlers[:]:
        root.removeHandler(old)
    root.setLevel(logging.WARNING)
    gc.unfreeze()
    try:
        runpy.run_module("gaiamesh", run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
    return 1


def _preload_native(argv: list[str]) -> None:
    """Import the bindings ``--native a,b`` names (a name with no native wire is left to the agent)."""
    from ..mesh.native import NoNativeWire, binding

    if "--native" not in argv or argv.index("--native") + 1 >= len(argv):
        return
    for protocol in argv[argv.index("--native") + 1].split(","):
        with contextlib.suppress(NoNativeWire):
            binding(protocol)


if __name__ == "__main__":
    _serve()
