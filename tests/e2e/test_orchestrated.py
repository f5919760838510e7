"""The orchestrated strategy end to end: the orchestrator, research and utility agents as
processes, the real relay and the real model; sub-tasks and results travel as counted frames."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pypdf
import pytest

from gaiamesh.agents.teams import agent_specs, lineup
from gaiamesh.deploy.local import ProcessGroup, child_env, web_server
from gaiamesh.evaluation.audit import audit
from gaiamesh.evaluation.finish import run_and_finish
from gaiamesh.evaluation.metrics import RunMetrics, read_log
from gaiamesh.mesh.records import FrameRecord
from gaiamesh.mesh.relay import MeshNetwork
from gaiamesh.settings import Settings, load_settings
from gaiamesh.tasks import Task, load_task

from ..conftest import TASKS, dev_task, free_port, free_port_block

pytestmark = [pytest.mark.e2e, pytest.mark.model]


def team(tmp_path: Path, model_server: str, tools: list[str]) -> Settings:
    port = free_port_block(len(tools))
    agents = ",".join(f"{i}={tool}@127.0.0.1:{port + i}" for i, tool in enumerate(tools))
    # SUBTASK_TIMEOUT as shipped (120 s): at the 60 s once set here, one answer step under the
    # suite's load took 61.6 s of model time and its plan was revised (six sub-tasks, not three)
    return load_settings(
        strategy="orchestrated", agents=agents, ollama_host=model_server, workspace_root=tmp_path / "ws",
        run_timeout=240,
    )  # fmt: skip


@contextlib.contextmanager
def running(settings: Settings, logs: Path) -> Iterator[ProcessGroup]:
    """The team's agents as processes, stopped afterwards whatever happens."""
    group = ProcessGroup(logs)
    try:
        for spec in agent_specs(settings):
            group.start(
                f"agent-{spec.node_id}", ["agent"],
                child_env(settings, node_id=spec.node_id, tool=spec.tool, port=str(spec.port)),
            )  # fmt: skip
        yield group
    finally:
        group.stop_all()


def ask(settings: Settings, task: Task, out: Path, **kw: Any) -> RunMetrics:
    """One run through the real relay."""
    return asyncio.run(run_and_finish(MeshNetwork(settings, task, out, quiet=True, **kw, lineup=lineup(settings))))


def audited(run_dir: Path) -> None:
    assert all(reported == recomputed for _, reported, recomputed in audit(run_dir))


def test_arithmetic_and_plain_questions_through_the_queues(tmp_path: Path, model_server: str) -> None:
    settings = team(tmp_path, model_server, ["orchestrator", "research", "utility"])
    tasks = [dev_task("arithmetic.jsonl#arithmetic", "lighthouse-keepers"), load_task(TASKS / "solar-farm")]
    with running(settings, tmp_path / "logs"):
        results = [ask(settings, t, tmp_path / t.task_id) for t in tasks]
    arithmetic, plain = results
    assert arithmetic.status == plain.status == "ok", (arithmetic.error, plain.error)
    assert (arithmetic.prediction, arithmetic.exact_match, arithmetic.strategy) == ("146", 1, "orchestrated")
    assert plain.exact_match == 1 and plain.token_sum > 0  # the model answered inside the research worker
    for task, m in zip(tasks, results, strict=True):
        run_dir = tmp_path / task.task_id
        audited(run_dir)
        types = [r.type for r in read_log(run_dir / "frames.jsonl")]
        assert types[0] == "doc_init" and types[-1] == "data_event"
        assert types.count("subtask") == types.count("result") >= 1
        with tarfile.open(run_dir / "run_artifacts.tar.gz") as tar:
            journal = [json.loads(x) for x in tar.extractfile("workspaces/0/journal.jsonl").read().splitlines()]  # type: ignore[union-attr]
            state = json.load(tar.extractfile("workspaces/0/task_state.json"))  # type: ignore[arg-type]
            assert "## Key findings" in tar.extractfile("workspaces/0/cwc.md").read().decode()  # type: ignore[union-attr]
        assert journal[0]["event"] == "plan_chosen" and journal[-1]["event"] == "task_completed"
        assert state["status"] == "COMPLETED" and state["answer"] == m.prediction
    # three sub-tasks for the arithmetic question: two facts from the document, then the calculator
    assert [r.type for r in read_log(tmp_path / "lighthouse-keepers" / "frames.jsonl")].count("subtask") == 3


def test_a_killed_worker_s_subtask_is_redelivered_and_the_run_completes(tmp_path: Path, model_server: str) -> None:
    settings = team(tmp_path, model_server, ["orchestrator", "research", "utility", "research"])
    killed: list[str] = []
    procs: dict[str, subprocess.Popen[bytes]] = {}

    def kill_first_worker(event: FrameRecord | str) -> None:
        # The research worker that receives the first sub-task dies while it works on it.
        if isinstance(event, FrameRecord) and event.type == "subtask" and not killed and event.dst:
            killed.append(event.dst[0])
            procs[f"agent-{event.dst[0]}"].send_signal(signal.SIGKILL)

    task = load_task(TASKS / "solar-farm")  # answer_question: the worker is busy with the model for seconds
    with running(settings, tmp_path / "logs") as group:
        procs.update(group.procs)
        metrics = ask(settings, task, tmp_path / "run", observer=kill_first_worker)
    assert killed and metrics.status == "ok" and metrics.exact_match == 1, metrics.error
    records = read_log(tmp_path / "run" / "frames.jsonl")
    (again,) = [r for r in records if r.status == "redelivered"]
    assert again.type == "subtask" and again.dst and again.dst[0] not in killed
    assert metrics.agents[killed[0]].status == "dead"
    audited(tmp_path / "run")


def test_no_worker_of_a_role_fails_the_step_and_the_run_explains_why(tmp_path: Path, model_server: str) -> None:
    # A team without a utility agent: the calculator step cannot run anywhere.
    settings = team(tmp_path, model_server, ["orchestrator", "research"])
    with running(settings, tmp_path / "logs"):
        metrics = ask(settings, dev_task("arithmetic.jsonl#arithmetic", "lighthouse-keepers"), tmp_path / "run")
    assert metrics.status == "agent_error" and metrics.error is not None
    assert "could not answer" in metrics.error and "no live 'utility' agent in this run" in metrics.error
    records = read_log(tmp_path / "run" / "frames.jsonl")
    failures = [r for r in records if r.type == "result" and r.src == "network"]
    assert len(failures) == 1 + settings.max_revisions  # each attempt's calculator step failed at the relay
    audited(tmp_path / "run")


def test_a_web_question_and_a_pdf_summary(tmp_path: Path, model_server: str) -> None:
    """The research worker searches and reads the offline web (served by `gaiamesh serve-web`);
    the orchestrator writes a PDF into its workspace, which the archive carries."""
    settings = team(tmp_path, model_server, ["orchestrator", "research", "utility"]).model_copy(
        update={"web_url": f"http://127.0.0.1:{free_port()}", "tasks_dir": TASKS}
    )
    web = tmp_path / "tasks" / "web"
    web.mkdir(parents=True)
    (web / "doc.txt").write_text("This run's own document says nothing about mills.\n")
    (web / "ground_truth.json").write_text(
        json.dumps({"question": "When was Tollard Windmill built, according to the web?", "answer": "1814"})
    )
    pdf = tmp_path / "tasks" / "pdf"
    pdf.mkdir()
    (pdf / "doc.txt").write_text((TASKS / "glass-museum" / "doc.txt").read_text())
    (pdf / "ground_truth.json").write_text(
        json.dumps({"question": "Write a PDF summary of the museum's chandelier.", "answer": "files/summary.pdf"})
    )
    with running(settings, tmp_path / "logs") as group, web_server(settings, group):
        asked = ask(settings, load_task(web), tmp_path / "web")
        written = ask(settings, load_task(pdf), tmp_path / "pdf")
    assert (asked.status, asked.prediction) == ("ok", "1814"), asked.error
    tools = [json.loads(base64.b64decode(r.b64))["payload"]["tool_name"]
             for r in read_log(tmp_path / "web" / "frames.jsonl") if r.type == "subtask"]  # fmt: skip
    assert tools == ["web_search", "read_webpage", "answer_question"]
    assert (written.status, written.prediction) == ("ok", "files/summary.pdf"), written.error
    with tarfile.open(tmp_path / "pdf" / "run_artifacts.tar.gz") as tar:
        reader = pypdf.PdfReader(io.BytesIO(tar.extractfile("workspaces/0/files/summary.pdf").read()))  # type: ignore[union-attr]
    text = " ".join(" ".join(p.extract_text() for p in reader.pages).split())
    assert text.startswith("Summary: the museum's chandelier") and "chandelier" in text.lower()[40:]
    for run in ("web", "pdf"):
        audited(tmp_path / run)


def test_a_saved_task_state_runs_its_plan_again(tmp_path: Path, model_server: str) -> None:
    task = dev_task("arithmetic.jsonl#arithmetic", "canal-reopened")
    first = team(tmp_path / "a", model_server, ["orchestrator", "research", "utility"])
    with running(first, tmp_path / "logs"):
        before = ask(first, task, tmp_path / "first")
    with tarfile.open(tmp_path / "first" / "run_artifacts.tar.gz") as tar:
        (tmp_path / "task_state.json").write_bytes(tar.extractfile("workspaces/0/task_state.json").read())  # type: ignore[union-attr]
    again = team(tmp_path / "b", model_server, ["orchestrator", "research", "utility"]).model_copy(
        update={"replay_plan": tmp_path / "task_state.json"}
    )
    with running(again, tmp_path / "logs2"):
        after = ask(again, task, tmp_path / "again")
    assert before.status == after.status == "ok" and after.prediction == before.prediction
    with tarfile.open(tmp_path / "again" / "run_artifacts.tar.gz") as tar:
        journal = [json.loads(x) for x in tar.extractfile("workspaces/0/journal.jsonl").read().splitlines()]  # type: ignore[union-attr]
    assert journal[0]["event"] == "plan_loaded" and journal[1]["source"] == "replay:task_state.json"
    assert "plan_chosen" not in [e["event"] for e in journal]  # no planning: the saved plan ran
    audited(tmp_path / "again")


def test_the_dry_run_command_reads_with_the_real_model(tmp_path: Path, model_server: str) -> None:
    """``gaiamesh plans``: the plans and the workers in-process, the facts chosen by the real
    model; a table, and every outcome with the model's tokens in the results file."""
    doc = ("The Harrow Street chapel was built in 1842 by the Primitive Methodists. It was enlarged in 1871 "
           "and closed in 1968. Its first minister, Amos Pell, was born in 1815 and died in 1889.\n")  # fmt: skip
    for name, question in (("enlarged", "How many years after the chapel was built was it enlarged?"),
                           ("builder", "Who built the Harrow Street chapel?")):  # fmt: skip
        folder = tmp_path / "set" / name
        folder.mkdir(parents=True)
        (folder / "doc.txt").write_text(doc, encoding="utf-8")
        (folder / "ground_truth.json").write_text(json.dumps({"question": question, "answer": "29"}), encoding="utf-8")
    out = tmp_path / "plans.json"
    done = subprocess.run(
        [sys.executable, "-m", "gaiamesh", "plans", str(tmp_path / "set"), "--out", str(out)],
        capture_output=True, text=True, timeout=300, env={**os.environ, "OLLAMA_HOST": model_server},
    )  # fmt: skip
    assert done.returncode == 0 and "dry run" in done.stdout, done.stdout + done.stderr
    (row,) = json.loads(out.read_text())["summary"]
    assert (row["tasks"], row["pipeline"]) == (2, 1) and row["tokens"] > 0  # the facts were the model's choice
    runs = {t["task_id"]: t for t in json.loads(out.read_text())["tasks"][str(tmp_path / "set")]}
    assert runs["enlarged"]["plan"] == "template:duration" and runs["enlarged"]["tokens"] > 0
