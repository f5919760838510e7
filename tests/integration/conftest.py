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

from ..conftest import ROOT, free_port

CORE = ["ollama", "agent-search", "agent-extract", "agent-triple", "agent-reason"]
WIDE = ["agent-search-2", "agent-extract-2", "agent-triple-2", "agent-reason-2"]


@dataclass
class Stack:
    """A running compose project and the means to run the relay against it."""

    project: str
    env: dict[str, str]
    tmp: Path
    env_file: Path  # empty: a developer's .env must not change the stack under test

    def compose(
        self, *args: str, profile: str | None = None, env: dict[str, str] | None = None, **kw: Any
    ) -> subprocess.CompletedProcess[str]:
        cmd = ["docker", "compose", "-p", self.project, "--env-file", str(self.env_file),
               *(["--profile", profile] if profile else []), *args]  # fmt: skip
        return subprocess.run(
            cmd, cwd=ROOT, env={**self.env, **(env or {})}, capture_output=True, text=True, **kw
        )

    def run_env(self, results: Path, **extra: str) -> dict[str, str]:
        results.mkdir(parents=True, exist_ok=True)
        return {**self.env, "RESULTS_DIR": str(results), **extra}

    def run(
        self, name: str, profile: str | None = None, **extra: str
    ) -> tuple[int, str, dict[str, Any], Path]:
        """One relay run (`docker compose run --rm network`); returns (exit code, output, metrics, results)."""
        results = self.tmp / name
        env = self.run_env(results, **extra)
        cmd = ["docker", "compose", "-p", self.project, "--env-file", str(self.env_file),
               *(["--profile", profile] if profile else []), "run", "--rm", "network"]  # fmt: skip
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        metrics_path = results / "metrics.json"
        metrics = json.loads(metrics_path.read_text()) if metrics_path.exists() else {}
        return proc.returncode, proc.stdout + proc.stderr, metrics, results


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Images and keys from `make images keys` (built here if missing); default services up and healthy."""
    subprocess.run(["make", "images", "keys"], cwd=ROOT, check=True)
    tmp = tmp_path_factory.mktemp("compose")
    workspaces = tmp / "workspaces"
    for n in range(8):
        (workspaces / str(n)).mkdir(parents=True)
    project = f"gaiamesh-it-{uuid.uuid4().hex[:8]}"
    env_file = tmp / "empty.env"
    env_file.write_text("")
    ollama_port = free_port()
    env = {
        **os.environ,
        "COMPOSE_PROJECT_NAME": project,
        "TESTCONTAINERS_RYUK_DISABLED": "true",
        "HOST_PORT_PREFIX": "19",
        "OLLAMA_PORT": str(ollama_port),
        "WORKSPACES_DIR": str(workspaces),
        "RESULTS_DIR": str(tmp / "results"),
        "RUN_TIMEOUT": "240",
    }
    env.pop("COMPOSE_FILE", None)  # the suite tests the default (bundled model) stack
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        mp.delenv("COMPOSE_FILE", raising=False)
        compose = DockerCompose(
            context=ROOT, compose_file_name="compose.yaml", services=CORE, wait=True, env_file=str(env_file)
        )
        stack = Stack(project, dict(os.environ), tmp, env_file)
        try:
            compose.start()
            yield stack
        finally:
            stack.compose("down", "--volumes", "--remove-orphans", "--timeout", "5", profile="wide")
