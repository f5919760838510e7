"""``gaiamesh bench-overhead`` writes its results for every path (numbers, not timing asserts)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import ROOT

pytestmark = pytest.mark.e2e


def test_bench_overhead_measures_every_path_and_writes_its_files(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "gaiamesh", "bench-overhead", "--relays-only", "--frames", "200",
         "--fanout-frames", "300", "--fanout", "4", "--rounds", "2", "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    r = json.loads((tmp_path / "overhead.json").read_text())
    lat, fan = r["latency_per_frame"], r["fanout_frames_per_s"]
    for path in ("plain", "floor", "mesh"):
        assert lat[path]["rounds"] == 2 and 0 < lat[path]["median_us"] <= lat[path]["p90_us"]
    for path in ("floor", "mesh"):
        assert fan[path]["4"] > 0
    if shutil.which("redis-server"):
        assert lat["redis"]["median_us"] > 0 and fan["redis"]["4"] > 0
    else:
        assert lat["redis"].startswith("skipped: redis-server is not installed")
    assert r["mesh_vs_floor_latency"] > 0 and r["mesh_vs_floor_fanout_4"] > 0
    md = (tmp_path / "overhead.md").read_text()
    assert "floor: byte-forwarding relay" in md and "gaiamesh / floor" in md
    assert (tmp_path / "overhead.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
