"""``gaiamesh bench-grammar``: both ways of drawing held output give the same tokens, and the
command writes its results (times are reported, not asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.model


def test_the_grammar_bench_writes_side_by_side_results_with_the_same_output(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gaiamesh", "bench-grammar", "--repeat", "1", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    rows = json.loads((tmp_path / "grammar.json").read_text())
    assert [r["case"] for r in rows] == ["typed answer", "triple", "plan"]
    assert all(r["same_output"] and r["tokens"] > 0 and r["in_chain_ms"] > 0 and r["draw_first_ms"] > 0 for r in rows), rows
