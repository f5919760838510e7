"""The Docker suites (tests/integration, tests/swarm) fail, never skip, when no Docker engine
answers, unless a machine opts out by name (docs/development.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..conftest import NO_DOCKER, require_docker


def test_no_engine_is_a_failure_that_says_what_to_do(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(NO_DOCKER, raising=False)
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")  # nothing answers there
    with pytest.raises(pytest.fail.Exception, match=r"this suite \(tests/x\) needs a Docker engine, and `docker info`"):
        require_docker("tests/x")
    monkeypatch.setenv("PATH", str(tmp_path))  # no docker command at all
    with pytest.raises(pytest.fail.Exception, match=f"(?s)no `docker` command on PATH.*{NO_DOCKER}=1"):
        require_docker("tests/x")


def test_the_opt_out_skips_and_names_itself(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(NO_DOCKER, "1")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(pytest.skip.Exception, match=f"{NO_DOCKER}=1: tests/x needs a Docker engine"):
        require_docker("tests/x")
