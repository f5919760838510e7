"""deploy/memory.py by plain calls: PSS read off smaps_rollup, a cgroup's limit and use (v1 and
v2, from files laid out as the kernel does), whether a stream fits, and the peak of a real
process group."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gaiamesh.deploy.memory import (
    HEADROOM,
    MIB,
    STREAM_BASE_MIB,
    STREAM_WORKER_MIB,
    PeakMemory,
    Room,
    cgroup_memory,
    pss_kib,
    room_for,
    team_pss_mib,
)

ROLLUP = """55d1c8a2e000-7ffd5e1f8000 ---p 00000000 00:00 0                          [rollup]
Rss:              140312 kB
Pss:               98765 kB
Pss_Anon:          70000 kB
"""


def test_pss_is_read_from_smaps_rollup() -> None:
    assert pss_kib(ROLLUP) == 98765
    assert pss_kib("Rss: 12 kB\n") == 0


def test_a_process_gone_counts_nothing(tmp_path: Path) -> None:
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "smaps_rollup").write_text(ROLLUP)
    assert team_pss_mib([7, 8], proc=tmp_path) == 98765 / 1024


def _cgroup(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_cgroup_v2_limit_and_use_without_inactive_file_pages(tmp_path: Path) -> None:
    root = _cgroup(tmp_path, {"memory.max": f"{1024 * MIB}\n", "memory.current": f"{300 * MIB}\n",
                              "memory.stat": f"anon 1\ninactive_file {100 * MIB}\nactive_file 5\n"})  # fmt: skip
    assert cgroup_memory(root) == (1024 * MIB, 200 * MIB)
    (root / "memory.max").write_text("max\n")
    assert cgroup_memory(root) == (None, 200 * MIB)


def test_cgroup_v1_limit_and_use(tmp_path: Path) -> None:
    root = _cgroup(tmp_path, {"memory/memory.limit_in_bytes": f"{3 * 1024 * MIB}\n",
                              "memory/memory.usage_in_bytes": f"{500 * MIB}\n",
                              "memory/memory.stat": f"cache 9\ntotal_inactive_file {50 * MIB}\n"})  # fmt: skip
    assert cgroup_memory(root) == (3 * 1024 * MIB, 450 * MIB)
    (root / "memory/memory.limit_in_bytes").write_text("9223372036854771712\n")  # v1's "no limit"
    assert cgroup_memory(root)[0] is None


def test_no_cgroup_files_no_bound(tmp_path: Path) -> None:
    assert cgroup_memory(tmp_path) == (None, None)
    room = room_for(64, root=tmp_path)
    assert room.fits and room.most_workers is None


@pytest.mark.parametrize("way", ["fork", "exec"])
def test_a_stream_fits_or_is_refused_with_the_figures(tmp_path: Path, way: str) -> None:
    root = _cgroup(tmp_path, {"memory.max": f"{3072 * MIB}\n", "memory.current": f"{200 * MIB}\n"})
    per = STREAM_WORKER_MIB[way]  # forked workers share the zygote's pages: fewer MiB each
    most = int((3072 * HEADROOM - 200 - STREAM_BASE_MIB) // per)
    assert room_for(most, root=root, agent_start=way).fits and not room_for(most + 1, root=root, agent_start=way).fits
    said = room_for(most + 1, root=root, agent_start=way).refusal()
    assert f"needs about {STREAM_BASE_MIB + (most + 1) * per} MiB" in said and "may use 3072 MiB" in said
    assert f"{per} MiB per worker" in said and f"at most {most} workers fit" in said and "NETWORK_MEMORY" in said
    # STREAM_MEMORY_MIB: what the team may take, whatever else is in use
    limit = int((STREAM_BASE_MIB + 3.5 * per) / HEADROOM)  # room for three and a half workers
    assert room_for(3, limit_mib=limit, root=root, agent_start=way).fits
    assert not room_for(4, limit_mib=limit, root=root, agent_start=way).fits
    assert Room(2, 0, 100.0, 500.0).most_workers == 0  # more in use than the limit: none


def test_the_peak_of_a_real_process_group() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import sys; b = bytearray(64 * 1024 * 1024); sys.stdin.read()"],
                             stdin=subprocess.PIPE)  # fmt: skip
    try:
        with PeakMemory(lambda: [os.getpid(), child.pid], every=0.05) as peak:
            deadline = time.monotonic() + 60
            while team_pss_mib([child.pid]) < 60:  # until the child has filled its 64 MiB
                assert time.monotonic() < deadline and child.poll() is None
        assert peak.peak_mib >= 60 + team_pss_mib([os.getpid()]) * 0.5
    finally:
        child.communicate(b"")
