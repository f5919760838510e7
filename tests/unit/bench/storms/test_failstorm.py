"""The fail-storm's measurements by plain calls: kills, restarts, frames and team changes in,
detection, recovery, the way back, retention and lost frames out."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gaiamesh.bench.storms.failstorm import (
    Kill,
    RunTrace,
    Storm,
    analyse,
    answers_changed,
    frames_lost,
    storm_loop,
)
from gaiamesh.evaluation.metrics import RunMetrics
from gaiamesh.mesh.records import FrameRecord

TOOLS = {"0": "search", "1": "extract", "2": "triple", "3": "reason", "4": "search", "5": "extract",
         "6": "triple", "7": "reason"}  # fmt: skip


def rec(src: str, dst: list[str], ptype: str, status: str = "accepted") -> FrameRecord:
    return FrameRecord.of(n=0, t_ms=0.0, src=src, dst=dst, blob=b"{}", received=src != "network", status=status,
                          type=ptype)  # type: ignore[arg-type]  # fmt: skip


def metrics(quality: float) -> RunMetrics:
    return RunMetrics(status="ok", task_id="t", question="q", answer="a", model="m", quality_score=quality,
                      exact_match=int(quality == 1.0))  # fmt: skip


def test_detect_recover_and_back_are_measured_from_the_relays_view() -> None:
    storm = RunTrace("t", "storm", Path("x"), metrics=metrics(1.0))
    storm.teams = [(1.05, {"2": "lost", "6": "connected"}), (3.2, {"2": "connected", "6": "connected"})]
    storm.frames = [(2.0, rec("1", ["6"], "events")), (4.0, rec("network", ["2"], "doc_init", "redelivered"))]
    calm = RunTrace("t", "calm", Path("y"), metrics=metrics(1.0))
    kill = Kill(t=1.0, node="2", tool="triple", restarted=3.0)
    summary = analyse([kill], [calm, storm], TOOLS)
    assert (kill.detect_s, kill.recover_s, kill.back_s) == (0.05, 1.0, 1.0)
    assert kill.restored_s == 0.05  # replica 6 was live when the relay noticed: routable at once
    assert summary["median_recover_s"] == 1.0 and summary["retention"] == 1.0 and summary["frames_lost"] == 0
    assert kill.redeliver_s is None and summary["kills_holding_work"] == 0  # it held no work
    storm.frames.insert(0, (1.1, rec("network", ["6"], "events", "redelivered")))  # it held the events
    assert analyse([kill], [calm, storm], TOOLS)["median_redeliver_s"] == 0.1 and kill.redeliver_s == 0.1
    assert summary["runs_not_ok"] == {}


def test_a_tool_with_no_live_replica_is_restored_when_one_comes_back() -> None:
    storm = RunTrace("t", "storm", Path("x"), metrics=metrics(1.0))
    storm.teams = [(1.05, {"2": "connected", "6": "lost"}), (1.3, {"2": "lost", "6": "lost"}),
                   (2.9, {"2": "lost", "6": "connected"})]  # fmt: skip
    first, second = Kill(t=1.0, node="6", tool="triple"), Kill(t=1.2, node="2", tool="triple")
    summary = analyse([first, second], [storm], TOOLS)
    assert first.restored_s == 0.05  # 2 was still live then
    assert second.restored_s == 1.7  # none live until 6 came back at 2.9
    assert summary["median_restored_s"] == 0.875 and summary["max_restored_s"] == 1.7
    # a detection whose rounded delay would land past the relay's own report still finds it
    odd = RunTrace("t", "storm", Path("x"))
    odd.teams = [(58.0044, {"2": "lost", "6": "connected"}), (63.0, {"2": "connected", "6": "connected"})]
    kill = Kill(t=57.964, node="2", tool="triple")
    analyse([kill], [odd], TOOLS)
    assert (kill.detect_s, kill.restored_s) == (0.04, 0.04)


def test_a_frame_held_by_an_agent_that_died_counts_lost_unless_redelivered() -> None:
    run = RunTrace("t", "storm", Path("x"))
    run.frames = [(0.5, rec("1", ["2"], "events"))]  # triple 2 holds the events
    run.teams = [(1.0, {"2": "lost"})]
    assert frames_lost(run, TOOLS) == 1
    run.frames.append((1.1, rec("network", ["6"], "events", "redelivered")))
    assert frames_lost(run, TOOLS) == 0
    answered = RunTrace("t", "storm", Path("x"))
    answered.frames = [(0.5, rec("1", ["2"], "events")), (0.8, rec("2", ["3"], "triples"))]
    answered.teams = [(1.0, {"2": "lost"})]  # it died after answering: nothing lost
    assert frames_lost(answered, TOOLS) == 0
    readers = RunTrace("t", "storm", Path("x"))
    readers.frames = [(0.5, rec("network", ["2"], "doc_init"))]  # triple only reads doc_init
    readers.teams = [(1.0, {"2": "lost"})]
    assert frames_lost(readers, TOOLS) == 0


def test_retention_compares_the_storm_with_the_calm_batch() -> None:
    runs = [RunTrace("a", "calm", Path("x"), metrics=metrics(1.0)), RunTrace("b", "calm", Path("x"), metrics=metrics(1.0)),
            RunTrace("a", "storm", Path("x"), metrics=metrics(1.0)), RunTrace("b", "storm", Path("x"), metrics=metrics(0.5))]  # fmt: skip
    summary = analyse([], runs, TOOLS)
    assert summary["retention"] == 0.75 and summary["em_retention"] == 0.5 and summary["median_recover_s"] is None


def test_frames_a_native_client_gave_up_on_are_counted_beside_the_relays_lost_frames() -> None:
    from gaiamesh.mesh.wireend import WireLayers

    native = metrics(0.0).model_copy(update={"status": "frame_lost", "layers": WireLayers(undelivered=2)})
    runs = [RunTrace("a", "calm", Path("x"), metrics=metrics(1.0)), RunTrace("a", "storm", Path("x"), metrics=native)]
    summary = analyse([], runs, TOOLS)
    assert summary["frames_undelivered"] == 2 and summary["frames_lost"] == 0
    assert summary["runs_not_ok"] == {"a": "frame_lost"}


def test_a_storm_answer_that_differs_from_its_calm_answer_is_named() -> None:
    def run(phase: str, task: str, prediction: str) -> RunTrace:
        m = metrics(1.0).model_copy(update={"prediction": prediction, "task_id": task})
        return RunTrace(task, phase, Path(phase), metrics=m)

    runs = [run("calm", "a", "1901"), run("calm", "b", "Oslo"), run("storm", "a", "1901"), run("storm", "b", "Bergen")]
    assert answers_changed(runs) == {"b": ["Oslo", "Bergen"]}
    assert analyse([], runs, TOOLS)["answers_changed"] == {"b": ["Oslo", "Bergen"]}


class Team:
    """Agents that are all alive and come back at once: only the storm's schedule is tested."""

    def __init__(self) -> None:
        self.killed: list[str] = []
        self.ten = asyncio.Event()

    def alive(self) -> list[str]:
        return list(TOOLS)

    def kill(self, node: str) -> None:
        self.killed.append(node)
        if len(self.killed) >= 10:
            self.ten.set()

    async def back(self, node: str) -> float:
        return 0.0


async def test_a_storm_with_a_limit_stops_after_that_many_kills() -> None:
    team, kills = Team(), []  # type: ignore[var-annotated]
    await asyncio.wait_for(storm_loop(team, TOOLS, kills, Storm(kill=2, every=0.001, seed=1, limit=3), 0.0), 5)
    assert len(kills) == 3 and len(team.killed) == 3  # two, then the one the limit leaves
    endless = Team()
    task = asyncio.create_task(storm_loop(endless, TOOLS, [], Storm(kill=2, every=0.001), 0.0))
    await asyncio.wait_for(endless.ten.wait(), 5)  # no limit: it goes on past ten kills
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
