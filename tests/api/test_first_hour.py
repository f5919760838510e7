"""A new user's first hour against the real service (issue 31): `gaiamesh submit` as a subprocess
does what each of its options says, a task folder of one's own runs (never the bundled one in its
place), a question without a right answer is not scored, `gaiamesh report` reads the service's
run folders, errors are in our words, and a strategy whose team is not running is refused at once.

The service here lists the orchestrated team as optional agents that do not exist, as compose's
default stack does without the `orchestrated` profile."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..conftest import ROOT, TASKS
from .conftest import KEY, Service

TEAM = "8=orchestrator@absent-orchestrator.invalid:9008?,9=research@absent-research.invalid:9009?,10=utility@absent-utility.invalid:9010?"


@pytest.fixture(scope="module")
def svc(model_server: str, agents: tuple[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    service = Service(tmp_path_factory.mktemp("first-hour") / "state", model_server, (f"{agents[0]},{TEAM}", agents[1]))
    service.start()
    try:
        yield service
    finally:
        service.stop()


def gaiamesh(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "GAIAMESH_ACCESS_KEY": KEY, **env}
    return subprocess.run([sys.executable, "-m", "gaiamesh", *args], cwd=ROOT, env=environ, capture_output=True,
                          text=True, timeout=300)  # fmt: skip


def submit(svc: Service, *args: str, **env: str) -> tuple[subprocess.CompletedProcess[str], dict[str, object]]:
    """`gaiamesh submit` with ``args``; its exit, output and the metrics.json it saved (if any)."""
    out = svc.state.parent / f"submit-{len(list(svc.state.parent.glob('submit-*')))}"
    proc = gaiamesh("submit", "--url", svc.url, "--out", str(out), *args, **env)
    path = out / "metrics.json"
    return proc, (json.loads(path.read_text()) if path.is_file() else {})


@pytest.fixture
def own_task(tmp_path: Path) -> Path:
    """A task folder of the user's own, about something no bundled task mentions."""
    folder = tmp_path / "harbour-ferry"
    folder.mkdir()
    (folder / "doc.txt").write_text(
        "The Kessock harbour ferry was run by the town council from 1907. Its last crossing was made "
        "by the motor vessel Eilean Dubh in 1982, after which a road bridge carried the traffic.\n"
    )
    (folder / "ground_truth.json").write_text(json.dumps({"question": "Which vessel made the last crossing?",
                                                          "answer": "Eilean Dubh"}))  # fmt: skip
    return folder


def test_a_task_folder_of_ones_own_runs_by_path_and_by_TASK(svc: Service, own_task: Path) -> None:
    # by path: its document, its question, scored against its answer, named after the folder
    proc, m = submit(svc, "--task", str(own_task))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert m["task_id"] == "harbour-ferry" and m["question"] == "Which vessel made the last crossing?"
    assert m["answer"] == "Eilean Dubh" and m["quality_score"] is not None
    # TASK (what `make up` mounts at /task) with no --task: that folder, not solar-farm
    proc, m = submit(svc, TASK=str(own_task), TASK_LABEL="./my-tasks/harbour-ferry")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert m["task_id"] == "harbour-ferry" and m["question"] == "Which vessel made the last crossing?"


def test_every_option_submit_advertises_is_sent(svc: Service) -> None:
    # a question the model has not answered before: the suite's model server answers a repeated
    # one from memory, within the half second
    fresh = f"What did the farm report say in section {uuid.uuid4().hex[:8]}?"
    proc, m = submit(svc, "--task", "solar-farm", "--question", fresh, "--protocol", "binary", "--run-timeout", "0.5")
    assert proc.returncode == 1 and m["status"] == "timeout" and m["protocol"] == "binary", proc.stdout
    assert "RUN_TIMEOUT=0.5s" in str(m["error"])
    # the strategy reaches the service: its team is listed but not running, so it is refused
    proc, m = submit(svc, "--task", "solar-farm", "--strategy", "orchestrated")
    assert proc.returncode == 1 and m == {}
    assert "409" in proc.stderr and "compose profile 'orchestrated'" in proc.stderr, proc.stderr
    # what submit cannot do per run is not offered
    for option in ("--model", "--ollama-host", "--workspaces"):
        proc = gaiamesh("submit", "--url", svc.url, option, "x")
        assert proc.returncode == 2 and "unrecognized arguments" in proc.stderr, option


def test_a_question_without_a_right_answer_is_not_scored_and_one_can_be_given(svc: Service, tmp_path: Path) -> None:
    doc = tmp_path / "notes.txt"
    doc.write_text((TASKS / "solar-farm" / "doc.txt").read_text())
    question = "What is the maximum power output that the Harrowgate Flats installation can feed into the grid?"
    proc, m = submit(svc, "--document", str(doc), "--question", question)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert m["task_id"] == "notes" and m["prediction"]
    assert all(m[k] is None for k in ("quality_score", "exact_match", "rouge_l", "squad_f1")), m
    assert "not scored" in proc.stdout
    proc, m = submit(svc, "--document", str(doc), "--question", question, "--answer", "148 megawatts")
    assert proc.returncode == 0 and m["answer"] == "148 megawatts" and isinstance(m["quality_score"], float)


def test_report_reads_the_services_run_folders(svc: Service, tmp_path: Path) -> None:
    runs = svc.state / "runs"
    if len(list(runs.glob("*/metrics.json"))) < 2:  # this module's earlier tests left runs; alone, make two
        for _ in range(2):
            submit(svc, "--task", "solar-farm", "--run-timeout", "0.5")
    proc = gaiamesh("report", str(runs), "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = (tmp_path / "results.csv").read_text().splitlines()
    assert len(rows) == 1 + len(list(runs.glob("*/metrics.json")))
    assert (tmp_path / "summary.md").is_file() and (tmp_path / "comparison.png").stat().st_size > 0


def test_errors_say_what_was_wrong_and_what_to_do(svc: Service) -> None:
    r = svc.http.get("/api/runs", headers={"Authorization": "Bearer not-the-key"})
    assert r.status_code == 401 and "segments" not in r.text.lower()
    assert "GAIAMESH_ACCESS_KEY" in r.json()["detail"]
    r = svc.http.post("/api/runs", json={})
    assert r.status_code == 422 and "not both" not in r.text
    assert "nothing to run: give 'task'" in r.json()["detail"][0]["msg"] and "Value error" not in r.text
    r = svc.http.post("/api/runs", json={"task": "solar-farm", "strategy": "orchestrated"})
    assert r.status_code == 409 and "--profile orchestrated" in r.json()["detail"]
    r = svc.http.post("/api/sessions", json={"task": "solar-farm", "strategy": "orchestrated"})
    assert r.status_code == 409 and "--profile orchestrated" in r.json()["detail"]
    proc = gaiamesh("submit", "--url", svc.url, "--document", "/no/such/file.txt", "--question", "q")
    assert proc.returncode == 2 and "--document /no/such/file.txt: no such file" in proc.stderr
    assert "Traceback" not in proc.stderr
