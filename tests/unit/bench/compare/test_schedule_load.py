"""A bench's order and the machine's load beside each run (bench/compare/schedule.py, bench/load.py,
bench/compare/fairness.py), by plain calls; and one real probe of this machine."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace

from gaiamesh.bench import stats as ci
from gaiamesh.bench.compare import fairness, schedule
from gaiamesh.bench.load import CONTENDED_CORES, LoadProbe, cpu_times, proc_stat, tree_ticks


def test_every_variant_of_a_task_runs_back_to_back_in_a_seeded_shuffled_order() -> None:
    tasks, variants = ["a", "b", "c"], ["json", "a2a", "anp", "acp", "agora"]
    slots = schedule.interleaved(tasks, variants, repeat=2, seed=7)
    assert [s.order for s in slots] == list(range(1, 31))
    assert sorted((s.repeat, s.task, s.variant) for s in slots) == sorted(
        (r, t, v) for r in (1, 2) for t in tasks for v in variants
    )
    # a task's five runs are consecutive: a drift over the bench falls on all its variants alike
    assert [s.task for s in slots[:5]] == ["a"] * 5 and [s.task for s in slots[5:10]] == ["b"] * 5
    firsts = [slots[i].variant for i in range(0, 30, 5)]
    assert len(set(firsts)) > 1  # json does not always go first
    assert schedule.interleaved(tasks, variants, 2, seed=7) == slots  # the same seed, the same order
    assert schedule.interleaved(tasks, variants, 2, seed=8) != slots


def test_cpu_and_process_times_are_read_from_proc_text() -> None:
    assert cpu_times("cpu  10 2 3 100 5 1 1 7 0 0\ncpu0 ...") == cpu_times("cpu 10 2 3 100 5 1 1 7")
    t = cpu_times("cpu  10 2 3 100 5 1 1 7 0 0\n")
    assert (t.busy, t.steal, t.total) == (17, 7, 129)
    assert proc_stat("42 (a (weird) name) S 7 42 42 0 -1 4194304 1 0 0 0 30 12 5 2 20 0 1 0") == (7, 49)
    procs = {1: (0, 5), 10: (1, 100), 11: (10, 20), 12: (11, 3), 20: (1, 1000)}
    assert tree_ticks(procs, [10]) == 123  # 10 and its descendants, not its sibling 20
    assert tree_ticks(procs, [10, 99]) == 123  # a root that ended adds nothing


def test_the_probe_tells_the_benchs_own_cpu_from_another_processs() -> None:
    # Two probes over the same second and a half, during which a child of this process spins:
    # to the one whose roots are this process it is the bench's own work, to the other it is
    # other load. Whatever else the machine does falls on both alike.
    ours, theirs = LoadProbe(lambda: [os.getpid()]), LoadProbe(lambda: [])
    ours.start()
    theirs.start()
    spin = "import time\nt = time.monotonic()\nwhile time.monotonic() - t < 1.5: pass"
    subprocess.run([sys.executable, "-c", spin], check=True)
    own, other = ours.stop(), theirs.stop()
    assert other.cpu_other - own.cpu_other >= 0.3  # the spin: counted only where it is not ours
    assert other.contended
    assert other.load_1m >= 0 and 0 <= other.steal_pct <= 100
    # a run of a few ms (a replayed one): a 10 ms tick is most of it, so its load is not judged
    brief = replace(other, seconds=0.02)
    assert not brief.contended and brief.row()["cpu_other"] == "" and brief.row()["contended"] is False


def interval(mean: float, low: float, high: float) -> ci.Interval:
    return ci.Interval(mean, low, high, 4, 2)


def test_a_time_difference_is_said_to_be_the_models_or_noise_before_the_protocols() -> None:
    noise = {"elapsed_ms": interval(-500, -2000, 900), "llm_ms": interval(-400, -1800, 800)}
    assert "no difference these runs can tell" in ci.time_verdict(noise, 0)
    model = {"elapsed_ms": interval(-27194, -37426, -16961), "llm_ms": interval(-26000, -36000, -16000)}
    said = ci.time_verdict(model, 2)
    assert "the model's time, not the protocol's" in said and "96%" in said and "2 of the runs" in said
    wire = {"elapsed_ms": interval(300, 200, 400), "llm_ms": interval(5, -20, 30)}
    assert ci.time_verdict(wire, 0).startswith("beyond the model's time")


def test_the_summary_names_the_groups_whose_runs_overlapped_other_load() -> None:
    rows = [{"protocol": p, "task_id": "t", "repeat": 1, "order": i, "cpu_other": c, "load_1m": 1.0,
             "steal_pct": 0.0, "containers": 3, "contended": c >= CONTENDED_CORES}
            for i, (p, c) in enumerate([("json", 0.9), ("a2a", 0.01), ("json", 0.02)])]  # fmt: skip
    text = fairness.load_section(rows, lambda r: str(r["protocol"]))
    assert "1 of 3 runs overlapped other load" in text and "the intervals of json include them" in text
    calm = [{**r, "cpu_other": 0.0, "contended": False} for r in rows]
    assert "No run overlapped other load" in fairness.load_section(calm, lambda r: str(r["protocol"]))
    assert "Not measured" in fairness.load_section([{"protocol": "json"}], lambda r: "json")
    brief = [{**r, "cpu_other": "", "contended": False} for r in rows]
    assert "3 runs lasted under 1 s" in fairness.load_section(brief, lambda r: str(r["protocol"]))
