"""Shared fixtures: free ports and the real model server (started by the tests themselves)."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Playwright, sync_playwright

from gaiamesh.agents.teams import default_agents
from gaiamesh.deploy.local import ProcessGroup, child_env, free_port, free_port_block, wait_until_answers  # noqa: F401
from gaiamesh.settings import load_settings
from gaiamesh.tasks import Task, read_set

from . import shared

ROOT = Path(__file__).resolve().parent.parent
pytest_plugins = ["tests.parallel", "tests.phases"]  # two workers at once; the time of each phase at the end

# Hermetic tests: a developer's .env must not change what the tests check (subprocesses inherit).
os.environ["GAIAMESH_ENV_FILE"] = ""
# Every model server the suite starts (ours, the compose stack's, llama-cpp-python's) computes on
# one core: `make test` runs two workers on two cores, and two llama.cpp servers of two threads
# each spin against each other at their barriers (a run took three to four times as long).
os.environ["MODEL_THREADS"] = "1"
TASKS = ROOT / "tasks"
DEV = ROOT / "tasks-dev"


def small_task(root: Path) -> Path:
    """A task folder of three short lines under ``root``, for tests whose subject is how a backend
    is reached, chosen and recorded: a bundled task's longer document only multiplies the
    model's calls (half the tokens of solar-farm's run), and llama-cpp-python's server computes
    every one (it has no memo)."""
    task = root / "kestrel-point"
    task.mkdir(parents=True)
    (task / "doc.txt").write_text(
        "Kestrel Point lighthouse stands on the northern cliffs of Arden Isle. It was first lit in 1887.\n"
        "Its lamp can be seen from 22 nautical miles away on a clear night.\n"
        "The keepers left in 1961, when the light was made automatic.\n"
    )
    (task / "ground_truth.json").write_text(json.dumps({"question": "When was Kestrel Point lighthouse first lit?",
                                                        "answer": "1887"}))  # fmt: skip
    return task


def dev_task(ref: str, task_id: str) -> Task:
    """One task of a development set, e.g. ``dev_task("arithmetic.jsonl#arithmetic", "lighthouse-keepers")``."""
    return {t.task_id: t for t in read_set(DEV / ref)}[task_id]


@contextlib.contextmanager
def _server(argv: list[str], log: Path, ready: str, name: str, **env: str) -> Iterator[None]:
    """A server process of the tests' own, until the block ends; ``ready``: a URL that answers 200."""
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                env={**os.environ, "PYTHONUNBUFFERED": "1", **env})  # fmt: skip

    def alive() -> None:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited: {log.read_text()}")

    try:
        wait_until_answers(ready, alive, 180, name)
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _model_server(name: str, memo: bool) -> str:
    port = free_port()
    argv = [sys.executable, "-m", "gaiamesh", "serve-model", "--host", "127.0.0.1", "--port", str(port)]
    return shared.server(name, argv, f"http://127.0.0.1:{port}", "/api/version", MODEL_MEMO="on" if memo else "off")


@pytest.fixture(scope="session")
def live_model_server() -> str:
    """The real bundled model server with the real Gemma 3 270M, on a free port: every request
    computed, for the tests whose subject is the model server and its times. One for the whole
    run, whichever worker asks first (tests/shared.py)."""
    return _model_server("live-model-server", memo=False)


@pytest.fixture(scope="session")
def model_server() -> str:
    """The same real server and model with MODEL_MEMO=on: a request it has answered once this
    run (the same prompt and options) is answered again from memory, with the model's own
    text and counts, and no model time. Most of the suite's runs ask the bundled tasks' same
    questions again under another protocol, transport or route; what they check is the mesh,
    and the model's answers stay the real ones (every first request is computed)."""
    return _model_server("model-server", memo=True)


# The bundled tasks the wire tests run. Their model calls are recorded once from the real model,
# and those tests replay them: what they check (frames, routing, redelivery, counters) is the
# wire's, and a replay takes the model's time out of the suite, not the model's answers.
RECORDED = ("solar-farm", "glass-museum", "mountain-observatory")
STREAM_QUERIES = ROOT / "tasks-stream" / "protocolbench-top1000.jsonl"
RECORDED_STREAM = 6  # the first queries of STREAM_QUERIES the ``recorded`` folder also holds answers to


@pytest.fixture(scope="session")
def recorded(live_model_server: str) -> Path:
    """A live bench of :data:`RECORDED` under json with the real model (the pipeline; the
    orchestrated team on solar-farm, in ``orchestrated/``): the folder REPLAY_FROM reads (every
    model call of those runs is in their archives). On the server without a memo: a replay at
    the recorded pace takes each call's own time. No warm-up run (``--no-warm-up``): its answers
    would be the same, and no time of the recording is compared with another. Made once for the
    whole run, begun as soon as the tests are collected (:func:`pytest_collection_finish`)."""
    return _RECORDING.result() if _RECORDING is not None else _recording()


def _recording() -> Path:
    return shared.made("recorded", lambda tmp: _record(tmp, _model_server("live-model-server", memo=False))) / "live"


_RECORDING: Future[Path] | None = None


def pytest_collection_finish(session: pytest.Session) -> None:
    """When a collected test replays the live recording, begin it now, in a thread of its own:
    the tests before the first that needs it (and the other worker's) run meanwhile. The
    fixture waits for it; its error, if any, is that fixture's."""
    global _RECORDING
    if any("recorded" in getattr(item, "fixturenames", ()) for item in session.items):
        pool = ThreadPoolExecutor(1, thread_name_prefix="recording")
        _RECORDING = pool.submit(_recording)
        pool.shutdown(wait=False)  # the thread ends with the recording; the fixture holds its result


def _record(tmp: Path, model_server: str) -> None:
    (tmp / "tasks").mkdir(parents=True)
    for name in RECORDED:
        (tmp / "tasks" / name).symlink_to(TASKS / name)
    (tmp / "solar-farm").mkdir()
    (tmp / "solar-farm" / "solar-farm").symlink_to(TASKS / "solar-farm")
    # every task through the pipeline; the orchestrated team on the one task the tests replay it on
    for tasks, strategy, out in ((tmp / "tasks", "pipeline", tmp / "live"),
                                 (tmp / "solar-farm", "orchestrated", tmp / "live" / "orchestrated")):  # fmt: skip
        argv = [sys.executable, "-m", "gaiamesh", "bench", "--tasks", str(tasks), "--protocols", "json",
                "--strategies", strategy, "--repeat", "1", "--no-warm-up", "--out", str(out),
                "--workspaces", str(tmp / "ws" / strategy), "--ollama-host", model_server]  # fmt: skip
        proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert not (out / "warm-up").exists()  # --no-warm-up: each task's questions asked once
    # and a short live stream of ProtocolBench's first queries (RECORDED_STREAM), so that a
    # deployed stream team (the swarm suite's) can replay it
    argv = [sys.executable, "-m", "gaiamesh", "stream", "--tasks", str(STREAM_QUERIES), "--limit",
            str(RECORDED_STREAM), "--workers", "2", "--out", str(tmp / "live" / "stream"), "--ollama-host", model_server]  # fmt: skip
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def recorded_metrics(recorded: Path, task_id: str, strategy: str = "pipeline") -> dict[str, str]:
    """The live bench's row of ``task_id`` under ``strategy`` (see the ``recorded`` fixture)."""
    rows = (r for path in sorted(recorded.rglob("results.csv")) for r in csv.DictReader(path.open()))
    return next(r for r in rows if r["task_id"] == task_id and (r["strategy"] or "pipeline") == strategy)


def replayed(recorded: Path, pace: str = "instant") -> dict[str, str]:
    """Settings (environment names) that answer every model call from ``recorded``; no model server."""
    return {"LLM_BACKEND": "replay", "REPLAY_FROM": str(recorded), "REPLAY_PACE": pace,
            "OLLAMA_HOST": f"http://127.0.0.1:{free_port()}"}  # fmt: skip


@contextlib.contextmanager
def llama_cpp_server(host: str, log: Path) -> Iterator[str]:
    """A server nobody here wrote: llama-cpp-python's OpenAI-compatible server, serving the same
    bundled GGUF under the same name, on ``host`` and a free port; ``--logits_all`` gives prompt
    log-probabilities (``echo``). Yields its base URL as the openai client takes it (``.../v1``)."""
    from gaiamesh.models.modelserver import bundled_model_path

    port = free_port()
    argv = [sys.executable, "-m", "llama_cpp.server", "--model", str(bundled_model_path()), "--model_alias",
            "gemma3:270m", "--host", host, "--port", str(port), "--n_ctx", "4096", "--n_threads", os.environ["MODEL_THREADS"],
            "--n_threads_batch", os.environ["MODEL_THREADS"],
            "--logits_all", "true", "--verbose", "false"]  # fmt: skip
    url = f"http://{host}:{port}/v1"
    with _server(argv, log, f"{url}/models", "llama-cpp-python server"):
        yield url


@pytest.fixture(scope="session")
def openai_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama-cpp-python's OpenAI-compatible server on 127.0.0.1 (see :func:`llama_cpp_server`)."""
    with llama_cpp_server("127.0.0.1", tmp_path_factory.mktemp("openai-server") / "server.log") as url:
        yield url


@contextlib.contextmanager
def agent_team(tmp: Path, **settings: Any) -> Iterator[tuple[str, Path]]:
    """Four agent processes on free ports with ``settings``: their ``AGENTS`` line and workspace root."""
    s = load_settings(agents=default_agents(free_port_block(4)), workspace_root=tmp / "ws", **settings)
    group = ProcessGroup(tmp / "logs")
    group.start_team(s)
    try:
        yield s.agents, tmp / "ws"
    finally:
        group.stop_all()


@pytest.fixture(scope="session")
def agents(model_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """Four long-lived agent processes (json by default; runs pick their protocol): their
    ``AGENTS`` line and their workspace root."""
    with agent_team(tmp_path_factory.mktemp("agents"), ollama_host=model_server) as team:
        yield team


@pytest.fixture(scope="session")
def live_agents(live_model_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """Four agent processes like :func:`agents` on :func:`live_model_server`: their runs take
    the model's time, for tests that watch a run while it is in flight."""
    with agent_team(tmp_path_factory.mktemp("live-agents"), ollama_host=live_model_server) as team:
        yield team


@pytest.fixture(scope="session")
def replayed_agents(recorded: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """Four long-lived agent processes like :func:`agents`, answering every model call from
    ``recorded`` (the :data:`RECORDED` tasks only): for the service's tests of storage, where the
    model's time is not what is tested. A service they serve needs :func:`replayed` in its
    environment too (the relay reads how the answers were chosen)."""
    with agent_team(tmp_path_factory.mktemp("replayed-agents"), llm_backend="replay", replay_from=recorded) as team:
        yield team


@pytest.fixture(scope="session")
def paced_agents(recorded: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """Four agent processes like :func:`agents` replaying ``recorded`` at its recorded pace: a
    run of a :data:`RECORDED` task lasts as long as the live model made it and is watched in
    flight, with no model computing. A service they serve needs ``replayed(recorded, "recorded")``."""
    with agent_team(tmp_path_factory.mktemp("paced-agents"), **paced(recorded)) as team:
        yield team


def paced(recorded: Path) -> dict[str, Any]:
    """Settings (load_settings' names) that replay ``recorded`` at its recorded pace."""
    return {"llm_backend": "replay", "replay_from": recorded, "replay_pace": "recorded"}


def chromium_path() -> str:
    """Debian's Chromium binary (``make setup`` installs the package where it is missing)."""
    for candidate in (os.environ.get("CHROMIUM"), "/usr/lib/chromium/chromium", shutil.which("chromium")):
        if candidate and Path(candidate).is_file():
            return candidate
    raise RuntimeError("Chromium is not installed: run `make setup` (it runs apt-get install chromium)")


# Module scope: Playwright's sync API runs its own event loop while it is open, and the asyncio
# tests that run later in the same process need the thread to themselves.
@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    args = ["--no-sandbox"] if os.geteuid() == 0 else []  # Chromium's sandbox refuses to run as root
    b = playwright.chromium.launch(executable_path=chromium_path(), args=args, headless=True)
    try:
        yield b
    finally:
        b.close()


@contextlib.contextmanager
def small_disk(path: Path, size: str) -> Iterator[Path]:
    """A real file system of ``size`` (a tmpfs) mounted at ``path``: writes past it fail with
    ENOSPC, as on a full disk. Mounting needs root, as CI has; elsewhere the test is skipped."""
    path.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True, text=True)  # fmt: skip
    if proc.returncode != 0:
        pytest.skip(f"a small disk needs `mount -t tmpfs` (root): {proc.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill_disk(folder: Path) -> Path:
    """Fill the file system under ``folder`` to its last byte; returns the filler file."""
    filler = folder / "filler.bin"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        while os.write(fd, b"\0" * 65536):
            pass
    except OSError:
        pass  # ENOSPC: full
    finally:
        os.close(fd)
    return filler


# `make test-full` (GAIAMESH_TESTS_FULL=1) also runs the tests marked `full`: cells that repeat code
# another test already runs through the same real components (docs/development.md).
FULL = "GAIAMESH_TESTS_FULL"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get(FULL) == "1":
        return
    skip = pytest.mark.skip(reason=f"a repeated cell: `make test-full` ({FULL}=1) runs it")
    for item in items:
        if item.get_closest_marker("full"):
            item.add_marker(skip)


# The variable that lets a machine without Docker skip the suites that need it (they fail without it).
NO_DOCKER = "GAIAMESH_TESTS_WITHOUT_DOCKER"


def require_docker(suite: str) -> None:
    """Fail, never skip, when no Docker engine answers ``docker info``: a CI machine whose engine
    is missing must not pass the Docker suites green by skipping them. ``NO_DOCKER=1`` skips
    ``suite`` instead, on a machine that has no Docker on purpose."""
    if os.environ.get(NO_DOCKER) == "1":
        pytest.skip(f"{NO_DOCKER}=1: {suite} needs a Docker engine and is skipped on request")
    try:
        proc = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True,
                              timeout=60)  # fmt: skip
        why = f"`docker info` failed: {proc.stderr.strip() or proc.stdout.strip()}" if proc.returncode else ""
    except FileNotFoundError:
        why = "there is no `docker` command on PATH"
    except subprocess.TimeoutExpired:
        why = "`docker info` did not answer within 60 s"
    if why:
        pytest.fail(f"this suite ({suite}) needs a Docker engine, and {why}\nStart one (or point DOCKER_HOST at "
                    f"one), or set {NO_DOCKER}=1 to skip the suite on a machine without Docker.", pytrace=False)  # fmt: skip
