"""Shared fixtures: free ports and the real model server (started by the tests themselves)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from gaiamesh.runner import free_port, free_port_block  # noqa: F401 (shared with the tests)

ROOT = Path(__file__).resolve().parent.parent

# Hermetic tests: a developer's .env must not change what the tests check (subprocesses inherit).
os.environ["GAIAMESH_ENV_FILE"] = ""
TASKS = ROOT / "tasks"


@pytest.fixture(scope="session")
def model_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The real bundled model server with the real Gemma 3 270M, on a free port."""
    port = free_port()
    log = tmp_path_factory.mktemp("model-server") / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gaiamesh", "serve-model", "--host", "127.0.0.1", "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"model server exited: {log.read_text()}")
            try:
                if httpx.get(f"{url}/api/version", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"model server not up after 120s: {log.read_text()}")
            time.sleep(0.2)  # polling a child process for readiness
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
