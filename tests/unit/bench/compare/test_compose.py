"""`gaiamesh bench-compose` (what `make bench` runs) refuses what it cannot run before it asks the
stack anything; the stack's own processes are found from its containers (tests/integration's
test_make runs it on a real stack)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gaiamesh.bench.compare import compose as compose_bench
from gaiamesh.cli import main
from gaiamesh.errors import ConfigError

from ....conftest import ROOT


def test_replaying_needs_a_record_of_every_task(tmp_path: Path) -> None:
    (tmp_path / "solar-farm").mkdir()
    (tmp_path / "solar-farm" / "run_artifacts.tar.gz").write_bytes(b"")
    compose_bench.check_records(tmp_path, ["solar-farm"])
    with pytest.raises(ConfigError, match=r"no record to replay under .* for mountain-town \(make bench records"):
        compose_bench.check_records(tmp_path, ["solar-farm", "mountain-town"])


def test_the_command_refuses_an_unknown_protocol_and_a_missing_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GAIAMESH_ACCESS_KEY", "unit-access-key-0123456789")
    base = ["bench-compose", "--url", "http://127.0.0.1:9", "--project", "none", "--tasks", str(ROOT / "tasks"),
            "--limit", "1", "--out", str(tmp_path)]  # fmt: skip
    assert main([*base, "--protocols", "json,nope"]) != 0
    assert "unknown protocol 'nope'" in capsys.readouterr().err
    assert main([*base, "--protocols", "json", "--replayed-from", str(tmp_path / "records")]) != 0
    assert "no record to replay" in capsys.readouterr().err
    assert not (tmp_path / "bench-runs").exists()  # nothing ran


def test_a_project_without_containers_has_no_roots() -> None:
    assert compose_bench.stack_roots(f"gaiamesh-no-such-project-{os.getpid()}") == []
