"""The real network service (``gaiamesh serve`` under uvicorn) over four real agent processes
and the real model server, all on 127.0.0.1, started and stopped by the tests themselves."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

from gaiamesh.deploy.local import wait_until_answers

from ..conftest import ROOT, TASKS, free_port

KEY = "test-access-key-0123456789"
SECRET = "test-session-secret-0123456789-abcdefgh"


class Service:
    """One ``gaiamesh serve`` process; restartable on the same state folder."""

    def __init__(self, state: Path, model_server: str, agents: tuple[str, Path], **env: str) -> None:
        self.state = state
        self.port = free_port()  # never one handed to agents started beside it and not bound yet
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "PYTHONUNBUFFERED": "1",
            "AGENTS": agents[0],
            "OLLAMA_HOST": model_server,
            "OUT_DIR": str(state),
            "TASKS_DIR": str(TASKS),
            "WORKSPACE_ROOT": str(agents[1]),  # the agents' workspaces, as compose mounts them
            "GAIAMESH_ACCESS_KEY": KEY,
            "GAIAMESH_SESSION_SECRET": SECRET,
            "SERVICE_PORT": str(self.port),
            "RUN_TIMEOUT": "120",
            **env,
        }
        self.proc: subprocess.Popen[bytes] | None = None
        self.http = httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {KEY}"}, timeout=30)

    def start(self) -> None:
        log = (self.state.parent / "serve.log").open("ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "gaiamesh", "serve"], env=self.env, stdout=log,
                                     stderr=subprocess.STDOUT, cwd=ROOT)  # fmt: skip
        proc = self.proc

        def alive() -> None:
            if proc.poll() is not None:
                raise RuntimeError(f"serve exited: {(self.state.parent / 'serve.log').read_text()[-3000:]}")

        wait_until_answers(f"{self.url}/api/health", alive, 60, "gaiamesh serve")

    def stop(self, kill: bool = False) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
            self.proc.wait(timeout=30)
        self.proc = None

    def events(self, run_id: str, token: str = KEY) -> list[dict[str, Any]]:
        """Every event of a run, from the first, until the service closes the stream."""
        ws_url = self.url.replace("http", "ws") + f"/api/runs/{run_id}/events?token={token}"
        with connect(ws_url, open_timeout=10) as ws:
            return [json.loads(m) for m in ws]


@pytest.fixture(scope="module")
def service(model_server: str, agents: tuple[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    svc = Service(tmp_path_factory.mktemp("service") / "state", model_server, agents,
                  MAX_QUEUED_RUNS="2", MAX_DOC_BYTES="4000", STREAM_MEMORY_MIB="1000")  # fmt: skip
    svc.start()
    try:
        yield svc
    finally:
        svc.stop()
