"""A user's own folder and file reach the service on standard input (issue 44): ``make up``
prints ``gaiamesh submit`` inside the network container, which sees none of the host's files, so
``tar -C FOLDER -c . | gaiamesh submit --task -`` and ``gaiamesh submit --document - < FILE``
are the routes. Run here as a user types them, in a shell, from a folder outside the repository,
against the real service, agents and model."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import KEY, Service

DOC = (
    "The Kessock harbour ferry was run by the town council from 1907. Its last crossing was made "
    "by the motor vessel Eilean Dubh in 1982, after which a road bridge carried the traffic.\n"
)
QUESTION = "Which vessel made the last crossing?"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A user's folder (not the repository) holding a task folder and a text file of theirs."""
    folder = tmp_path / "home" / "my tasks" / "harbour-ferry"
    folder.mkdir(parents=True)
    (folder / "doc.txt").write_text(DOC)
    (folder / "ground_truth.json").write_text(json.dumps({"question": QUESTION, "answer": "Eilean Dubh"}))
    (folder.parent.parent / "ferry notes.txt").write_text(DOC)
    return folder.parent.parent


def shell(service: Service, home: Path, line: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """``line`` in bash from ``home``, with ``gaiamesh`` the command a user has; and the
    metrics.json it saved into ``home/out``."""
    gaiamesh = f"{shlex.quote(sys.executable)} -m gaiamesh"
    env = {**os.environ, "GAIAMESH_ACCESS_KEY": KEY, "SERVICE_PORT": str(service.port)}
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", line.replace("gaiamesh ", f"{gaiamesh} ", 1)],
                          cwd=home, env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    saved = home / "out" / "metrics.json"
    metrics = json.loads(saved.read_text()) if saved.is_file() else {}
    saved.unlink(missing_ok=True)
    return proc, metrics


def test_a_host_folder_packed_by_tar_runs_on_the_service(service: Service, home: Path) -> None:
    proc, m = shell(
        service, home, "tar -C 'my tasks/harbour-ferry' -c . | gaiamesh submit --task - --out out"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert m["status"] == "ok" and m["question"] == QUESTION and m["answer"] == "Eilean Dubh", m
    assert m["prediction"] and m["quality_score"] is not None  # scored against the folder's answer
    # packed as the folder itself: the run is named after it
    proc, m = shell(service, home, "tar -C 'my tasks' -c harbour-ferry | gaiamesh submit --task - --out out")
    assert proc.returncode == 0 and m["status"] == "ok" and m["task_id"] == "harbour-ferry", proc.stderr


def test_a_host_file_on_standard_input_runs_on_the_service(service: Service, home: Path) -> None:
    line = f"gaiamesh submit --document - --question {shlex.quote(QUESTION)} --name ferry --out out < 'ferry notes.txt'"
    proc, m = shell(service, home, line)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (
        m["status"] == "ok" and m["task_id"] == "ferry" and m["question"] == QUESTION and m["prediction"]
    ), m
    assert m["quality_score"] is None and "not scored" in proc.stdout  # no right answer given


def test_what_the_container_cannot_see_is_named_with_the_route_that_works(
    service: Service, home: Path
) -> None:
    proc, _ = shell(service, home, "gaiamesh submit --task /host/my-task --out out")
    assert proc.returncode == 2 and "--task /host/my-task: no such task folder here" in proc.stderr
    assert "tar -C FOLDER -c . | ... --task -" in proc.stderr
    proc, _ = shell(service, home, "gaiamesh submit --document /host/notes.txt --question q --out out")
    assert proc.returncode == 2 and "--document - < FILE" in proc.stderr
    proc, _ = shell(service, home, "gaiamesh submit --task - --out out < 'ferry notes.txt'")
    assert proc.returncode == 2 and "--task -: standard input is not a tar archive" in proc.stderr
    proc, _ = shell(
        service, home, "tar -C 'my tasks' -c harbour-ferry | gaiamesh submit --document - --question q"
    )
    assert (
        proc.returncode == 2 and "--document -: the document on standard input holds NUL bytes" in proc.stderr
    )
    assert "Traceback" not in proc.stderr
