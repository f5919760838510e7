"""A document of ~20,000 characters through the whole pipeline with the real model: retrieval
reaches its last part, the model's context never overflows, and every stage shapes the answer."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

from ..conftest import ROOT, dev_task, free_port_block

pytestmark = [pytest.mark.e2e, pytest.mark.model]

LONGDOC = "long-documents.jsonl#longdoc"
N_CTX = 4096  # the bundled model server's context


def long_task(tmp_path: Path) -> Path:
    """Four development documents end to end (~19,500 characters); the question is about the last."""
    doc = "\n\n".join(dev_task(LONGDOC, f"{name}-1").doc for name in ("harwick", "orchestra", "shipyard", "reservoir"))
    assert 18_000 < len(doc) < 21_000
    task = tmp_path / "long"
    task.mkdir()
    (task / "doc.txt").write_text(doc)
    asked = dev_task(LONGDOC, "reservoir-2")
    truth = {"question": asked.question, "answers": list(asked.golds)}
    (task / "ground_truth.json").write_text(json.dumps(truth))
    return task


def run(task: Path, out: Path, model_server: str, ablate: str = "") -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "gaiamesh", "run", str(task), "--out", str(out), "--base-port", str(free_port_block(4)),
         "--ollama-host", model_server, "--workspaces", str(out.parent / f"ws-{out.name}")],
        cwd=ROOT, capture_output=True, text=True, timeout=600, env={**os.environ, "ABLATE": ablate},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads((out / "metrics.json").read_text())


def memories(out: Path) -> dict[str, dict[str, Any]]:
    with tarfile.open(out / "run_artifacts.tar.gz") as tar:
        return {n: json.load(tar.extractfile(f"workspaces/{n}/memory.json")) for n in "0123"}  # type: ignore[arg-type]


def test_a_long_document_is_searched_whole_and_no_prompt_overflows(tmp_path: Path, model_server: str) -> None:
    task = long_task(tmp_path)
    m = run(task, tmp_path / "full", model_server)
    assert m["status"] == "ok"
    mem = memories(tmp_path / "full")
    prompts = [c["prompt_tokens"] for node in mem.values() for step in node["steps"] for c in step["llm_calls"]]
    assert prompts and max(prompts) < N_CTX // 2, max(prompts)  # far from the context's end
    # the answering sentence, in the document's last quarter, reached reason
    chunks = mem["0"]["retrieved_chunks"]
    assert max(chunks) > 36, chunks  # 400-character chunks: the fourth document starts past 36
    assert any("38 metres" in f for f in mem["1"]["facts"])
    assert m["squad_f1"] == 1.0, m["prediction"]
    # search reranked by the model: it read candidates and counted the tokens
    assert mem["0"]["query_likelihood"] and m["agents"]["0"]["token_used"] > 0
    assert mem["3"]["likelihoods"] and mem["3"]["answer"] == m["prediction"]


def test_the_triple_stage_reaches_reason_and_costs_nothing_left_out(tmp_path: Path, model_server: str) -> None:
    """Left out (``ABLATE=triple``), the stage hands the facts on with no triples and no model
    call; whole, its triples reach reason (what they change is measured by ``bench --ablate``)."""
    task = long_task(tmp_path)
    full_m = run(task, tmp_path / "full", model_server)
    ablated_m = run(task, tmp_path / "ablated", model_server, ablate="triple")
    full, ablated = memories(tmp_path / "full"), memories(tmp_path / "ablated")
    assert full["2"]["triples"] and "triples" not in ablated["2"]
    assert full_m["agents"]["2"]["token_used"] > 0 == ablated_m["agents"]["2"]["token_used"]

    def triples_seen(out: Path) -> int:
        final = [json.loads(x) for x in (out / "frames.jsonl").read_text().splitlines()][-1]
        return int(json.loads(base64.b64decode(final["b64"]))["payload"]["triples_seen"])

    assert triples_seen(tmp_path / "full") == len(full["2"]["triples"]) and triples_seen(tmp_path / "ablated") == 0
