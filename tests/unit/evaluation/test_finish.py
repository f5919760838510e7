"""Finishing a run (evaluation/finish.py): one step for every way a run ends."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest
from pydantic import ValidationError

from gaiamesh.errors import (
    RUN_STATUS,
    AgentFailed,
    ConnectError,
    ModelError,
    ModelUnreachable,
    PortTaken,
    RunStatus,
    StorageError,
    run_status,
)
from gaiamesh.evaluation.finish import DirectCall, finish_run, logged
from gaiamesh.evaluation.metrics import RunMetrics, totals_from_log
from gaiamesh.mesh.payloads import ToolFailure
from gaiamesh.mesh.records import FrameLog, FrameRecord
from gaiamesh.mesh.wireend import Ending
from gaiamesh.settings import Settings
from gaiamesh.tasks import Task


def task(tmp: Path, answers: tuple[str, ...] = ("Ann", "Anne")) -> Task:
    return Task("t1", "Ann wrote it.", "Who wrote it?", answers[0] if answers else "", tmp, (), answers)


def settings() -> Settings:
    return Settings(_env_file=None, protocol="binary", scorer="em_rouge")  # type: ignore[call-arg]


def test_every_error_kind_names_a_status_the_schema_knows() -> None:
    known = set(RunStatus)
    assert set(RUN_STATUS.values()) <= known
    assert run_status(ModelUnreachable("x")) == "model_unreachable"
    assert run_status(ModelError("x")) == "model_error"
    assert run_status(AgentFailed("x")) == "agent_error"
    assert run_status(StorageError("x")) == "storage_error"
    assert run_status(ConnectError("x")) == "connect_failed"
    assert run_status(PortTaken("x")) == "failed"  # the most specific kind in the table wins


def test_an_agent_failure_on_the_wire_is_the_error_kind_it_reported() -> None:
    down = ToolFailure.of("search", "doc_init", ModelUnreachable("no server"))
    broken = ToolFailure.of("search", "doc_init", ValueError("bad input"))
    assert (down.kind, broken.kind) == ("model_unreachable", "tool")
    assert run_status(down.as_error("m")) == "model_unreachable"
    assert run_status(broken.as_error("m")) == "agent_error"


def test_a_misspelled_key_is_an_error_not_dropped() -> None:
    with pytest.raises(ValidationError, match="quality_scor"):
        RunMetrics.model_validate({"status": "ok", "task_id": "t", "question": "q", "answer": "a", "model": "m",
                                   "quality_scor": 1.0})  # fmt: skip


def test_a_run_that_could_not_start_keeps_its_golds_and_counts_what_its_log_holds(tmp_path: Path) -> None:
    log = FrameLog(tmp_path / "frames.jsonl")
    log.write([FrameRecord.of(n=0, t_ms=0.0, src="network", dst=["0", "1"], blob=b"x" * 40, received=False,
                              status="accepted", header_size=8, type="doc_init")])  # fmt: skip
    log.close()
    metrics = finish_run(tmp_path, settings(), task(tmp_path), Ending(RunStatus.INTERRUPTED, "the service stopped"), run_id="r1",
                         records=logged(tmp_path))
    assert metrics.status == "interrupted" and metrics.answers == ["Ann", "Anne"]
    assert metrics.protocol == "binary" and metrics.quality_score == 0.0  # scored: it had golds, gave no answer
    counted = totals_from_log(tmp_path / "frames.jsonl")
    assert {k: getattr(metrics, k) for k in counted} == counted and metrics.bytes_tx == 80
    assert RunMetrics.read(tmp_path / "metrics.json") == metrics
    assert json.loads((tmp_path / "config.json").read_text())["run_id"] == "r1"
    with tarfile.open(tmp_path / "run_artifacts.tar.gz") as tar:
        assert set(tar.getnames()) == {"frames.jsonl", "metrics.json", "config.json"}


def test_the_baseline_is_finished_by_the_same_step(tmp_path: Path) -> None:
    call = DirectCall("ollama", "base", 120, 850.0, 900.5)
    metrics = finish_run(tmp_path, settings(), task(tmp_path), Ending("ok", prediction="Ann"), direct=call)
    assert metrics.mode == "baseline" and metrics.protocol is None and metrics.exact_match == 1
    assert (metrics.token_sum, metrics.llm_ms, metrics.elapsed_ms, metrics.pkt_cnt) == (120, 850.0, 900.5, 0)
    unscored = finish_run(tmp_path, settings(), task(tmp_path, ()), Ending("ok", prediction="Ann"), direct=call)
    assert unscored.quality_score is None and not unscored.scored
