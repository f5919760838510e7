"""``gaiamesh bench-plans`` with the real model: both modes measured on the same questions, the
schema reaching the server (its plans are JSON from the first character)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.model]


def test_bench_plans_measures_free_and_schema_plans(tmp_path: Path, model_server: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "gaiamesh", "bench-plans", "--tasks", "tasks", "--limit", "2", "--out", str(tmp_path),
         "--ollama-host", model_server],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads((tmp_path / "plan_validity.json").read_text())
    summary = {row["mode"]: row for row in result["summary"]}
    assert set(summary) == {"free", "schema"} and all(r["plans"] == 2 for r in summary.values())
    assert all(r["valid"] <= r["parsed"] <= r["plans"] for r in summary.values())
    held = [p for p in result["plans"] if p["mode"] == "schema"]
    assert all(p["text"].lstrip().startswith("{") and p["tokens"] > 0 for p in held), held
    assert "| schema | 2 |" in (tmp_path / "plan_validity.md").read_text()
