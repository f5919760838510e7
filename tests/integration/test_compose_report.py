"""`gaiamesh report` inside the network container, as a user runs it on the stack's results:
the image has matplotlib (the plot is drawn), and a run saved twice (`submit --out` beside the
service's own runs/<run id>/) counts once."""

from __future__ import annotations

import csv
import json

import pytest

from .conftest import Stack

pytestmark = pytest.mark.integration


def test_report_in_the_network_container_draws_the_plot_and_counts_each_run_once(stack: Stack) -> None:
    code, output, m, _ = stack.run("report-copy")  # saved in /results/report-copy and /results/runs/<id>
    assert code == 0, output
    ran = stack.compose("exec", "-T", "network", "gaiamesh", "report", "/results", "--out", "/results/report",
                        timeout=300)  # fmt: skip
    said = ran.stdout + ran.stderr
    assert ran.returncode == 0, said
    assert "matplotlib" not in said and "Traceback" not in said
    assert (stack.results / "report" / "comparison.png").read_bytes()[:4] == b"\x89PNG"
    found = list(stack.results.rglob("metrics.json"))
    ids = {json.loads(p.read_text())["run_id"] for p in found}
    assert m["run_id"] in ids and len(found) > len(ids)  # this run is there twice
    with (stack.results / "report" / "results.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert sorted(r["run_id"] for r in rows) == sorted(ids)
    assert "duplicate run" in said
