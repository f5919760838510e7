"""The real compose stack, brought up with testcontainers under a unique project name."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from testcontainers.compose import DockerCompose

from .. import shared
from ..conftest import ROOT, free_port, require_docker

AGENTS = ["agent-search", "agent-extract", "agent-triple", "agent-reason"]
CORE = ["ollama", *AGENTS, "network"]
KEY = "integration-access-key-0123456789"
SECRET = "integration-session-secret-0123456789-abcdef"
MESH_TOKEN = "integration-mesh-token-0123456789"
WIDE = ["agent-search-2", "agent-extract-2", "agent-triple-2", "agent-reason-2"]
ORCHESTRATED = ["web", "agent-orchestrator", "agent-research", "agent-utility"]
STREAM = ["agent-coordinator", "agent-answerer"]


@pytest.fixture(scope="session", autouse=True)
def docker_engine() -> None:
    """Every test here needs a Docker engine: without one each fails, saying so (docs/development.md)."""
    require_docker("tests/integration")


@dataclass
class Stack:
    """A running compose project and the means to run tasks through its network service."""

    project: str
    env: dict[str, str]
    tmp: Path
    env_file: Path  # only the test's secrets: a developer's .env must not change the stack under test
    api: str  # http://127.0.0.1:<published service port>

    def compose(
        self, *args: str, profile: str | None = None, env: dict[str, str] | None = None, **kw: Any
    ) -> subprocess.CompletedProcess[str]:
        cmd = ["docker", "compose", "-p", self.project, "--env-file", str(self.env_file),
               *(["--profile", profile] if profile else []), *args]  # fmt: skip
        return subprocess.run(
            cmd, cwd=ROOT, env={**self.env, **(env or {})}, capture_output=True, text=True, **kw
        )

    @property
    def results(self) -> Path:
        return self.tmp / "results"

    def submit_cmd(self, out: str, *args: str) -> list[str]:
        """`gaiamesh submit` inside the network container, as `make up` runs it."""
        return ["docker", "compose", "-p", self.project, "--env-file", str(self.env_file), "exec", "-T", "network",
                "gaiamesh", "submit", "--url", "http://127.0.0.1:8080", "--out", f"/results/{out}", *args]  # fmt: skip

    def run(self, name: str, *args: str, stdin: str | None = None) -> tuple[int, str, dict[str, Any], Path]:
        """One run through the API (``stdin``: what `submit` reads for ``-``); returns (exit code,
        output, metrics, the folder it saved to)."""
        proc = subprocess.run(self.submit_cmd(name, *args), cwd=ROOT, env=self.env, capture_output=True,
                              text=True, timeout=600, input=stdin)  # fmt: skip
        folder = self.results / name
        metrics_path = folder / "metrics.json"
        metrics = json.loads(metrics_path.read_text()) if metrics_path.exists() else {}
        return proc.returncode, proc.stdout + proc.stderr, metrics, folder


@pytest.fixture(scope="package")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Images and keys from `make images keys` (built here if missing); default services up and
    healthy. One stack for the whole suite, removed when its last test ends."""
    shared.make(ROOT, "images", "keys")
    tmp = tmp_path_factory.mktemp("compose")
    workspaces = tmp / "workspaces"
    for n in range(13):
        (workspaces / str(n)).mkdir(parents=True)
    project = f"gaiamesh-it-{uuid.uuid4().hex[:8]}"
    env_file = tmp / "test.env"
    env_file.write_text(f"GAIAMESH_ACCESS_KEY={KEY}\nGAIAMESH_SESSION_SECRET={SECRET}\nGAIAMESH_MESH_TOKEN={MESH_TOKEN}\n")
    service_port = free_port()
    (tmp / "results").mkdir()
    # The containers run as a non-root user: the folders they write into must be theirs.
    owner = subprocess.run([ROOT / "scripts" / "owner.sh"], capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run([ROOT / "scripts" / "owner.sh", workspaces, tmp / "results"], check=True)
    env = {
        **os.environ,
        "COMPOSE_PROJECT_NAME": project,
        "TESTCONTAINERS_RYUK_DISABLED": "true",
        "HOST_PORT_PREFIX": "19",
        "SERVICE_PORT": str(service_port),
        "WORKSPACES_DIR": str(workspaces),
        "RESULTS_DIR": str(tmp / "results"),
        # A run's budget on a slow machine: under the fail-storm a run's steps are redone after
        # each kill, and at half this machine's usual model speed a storm run took over 240 s.
        "RUN_TIMEOUT": "600",
        "GAIAMESH_USER": owner,
        # the stack's model server answers a request it has answered before from memory: the
        # suite asks the bundled tasks again and again, and checks the stack, not the model's time
        "MODEL_MEMO": "on",
    }
    env.pop("COMPOSE_FILE", None)  # the suite tests the default (bundled model) stack
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        mp.delenv("COMPOSE_FILE", raising=False)
        compose = DockerCompose(
            context=ROOT, compose_file_name="compose.yaml", services=CORE, wait=True, env_file=str(env_file)
        )
        stack = Stack(project, dict(os.environ), tmp, env_file, f"http://127.0.0.1:{service_port}")
        try:
            compose.start()
            yield stack
        finally:
            stack.compose("down", "--volumes", "--remove-orphans", "--timeout", "5", profile="wide")
            stack.compose("down", "--volumes", "--remove-orphans", "--timeout", "5", profile="orchestrated")
            stack.compose("down", "--volumes", "--remove-orphans", "--timeout", "5", profile="stream")
