"""The network fault model by plain calls: its decisions (faults.py), and the core holding,
logging and redelivering by them, time passed in."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from gaiamesh.errors import ConfigError
from gaiamesh.mesh.core import RelayCore
from gaiamesh.mesh.faults import Fate, FaultModel, FaultPlan, Partition, network_faults
from gaiamesh.mesh.frames import NETWORK_SRC
from gaiamesh.mesh.outcome import Outcome
from gaiamesh.mesh.records import FrameRecord, Totals
from gaiamesh.settings import load_settings

from .test_core import FOUR, core, frame

NET = NETWORK_SRC


def model(**kw: Any) -> FaultModel:
    return FaultModel(FaultPlan(**kw))


# --- decisions -------------------------------------------------------------------------------
def test_no_faults_configured_means_no_model() -> None:
    assert network_faults(load_settings(), "0123") is None


def test_an_untouched_crossing_is_delivered_at_once() -> None:
    fate = model(slow_node="3", slow_ms=500).decide(NET, "1", 2.0)
    assert (fate.action, fate.at, fate.delay_ms, fate.causes) == ("deliver", 2.0, 0.0, ())


def test_latency_with_jitter_stays_in_its_band_and_repeats_with_the_seed() -> None:
    def fates(seed: int) -> list[float]:
        m = model(latency_ms=50, jitter_ms=20, seed=seed)
        return [m.decide(NET, "1", float(t)).delay_ms for t in range(200)]

    delays = fates(1)
    assert all(30 <= d <= 70 for d in delays) and len(set(delays)) > 100
    assert fates(1) == delays and fates(2) != delays  # seeded: the same seed, the same faults
    assert model(latency_ms=50, jitter_ms=20).decide("2", NET, 0.0).causes == ("latency",)  # both ways


def test_each_link_draws_from_its_own_stream() -> None:
    """Another link's traffic does not change this link's faults (replays meet the same ones)."""
    alone = model(latency_ms=50, jitter_ms=20)
    busy = model(latency_ms=50, jitter_ms=20)
    for t in range(5):
        busy.decide(NET, "2", float(t))
    assert [alone.decide(NET, "1", 10.0 + t).delay_ms for t in range(5)] == [
        busy.decide(NET, "1", 10.0 + t).delay_ms for t in range(5)
    ]


def test_latency_and_loss_only_on_the_links_named() -> None:
    m = model(latency_ms=50, loss=1.0, links=frozenset({"2"}))
    assert m.decide(NET, "1", 0.0).action == "deliver"
    assert m.decide(NET, "2", 0.0).action == "drop"


def test_a_slow_agent_is_slow_both_ways() -> None:
    m = model(slow_node="3", slow_ms=500)
    assert m.decide(NET, "3", 1.0).delay_ms == 500 and m.decide("3", NET, 1.0).delay_ms == 500
    assert m.decide(NET, "3", 1.0).causes == ("slow",) and m.decide("2", NET, 1.0).action == "deliver"


def test_a_partition_holds_what_would_arrive_in_it_until_it_ends() -> None:
    m = model(partition=Partition("1", 2.0, 12.0))
    assert m.decide(NET, "1", 1.0).action == "deliver"  # before
    held = m.decide("1", NET, 3.0)
    assert (held.action, held.at, held.delay_ms) == ("hold", 12.0, 9000.0)
    assert m.decide(NET, "2", 3.0).action == "deliver"  # other links are not cut
    assert m.decide(NET, "1", 12.0).action == "deliver"  # the end is not in it


def test_a_link_delivers_in_order() -> None:
    """A frame never overtakes an earlier one on its link: it waits behind it."""
    m = model(partition=Partition("1", 0.0, 5.0), latency_ms=10)
    first = m.decide(NET, "1", 4.0)  # held to 5.0
    second = m.decide(NET, "1", 4.999)  # would arrive at 5.009 anyway
    third = m.decide(NET, "1", 4.5)  # pushed to 5.0 by the partition, then behind the second
    assert first.at == 5.0 and second.at == pytest.approx(5.009) and third.at == second.at
    assert "queued" in third.causes and third.order > second.order > first.order


def test_a_lost_copy_is_redelivered_after_the_wait_and_may_be_lost_again() -> None:
    m = model(loss=0.5, redeliver_after=0.5, seed=3)
    fates = [m.decide(NET, "1", 10.0 * t) for t in range(40)]
    lost = [f for f in fates if f.lost]
    assert lost and any(len(f.lost) > 1 for f in lost) and len(lost) < 40
    for f in lost:
        t = f.lost[0]
        assert f.action == "drop" and f.causes == ("loss",) and not f.gave_up
        assert f.lost == tuple(t + 0.5 * i for i in range(len(f.lost)))
        assert f.sent == t + 0.5 * len(f.lost) and f.at == f.sent  # no latency: arrives as it leaves


def test_frames_agents_send_are_never_lost() -> None:
    m = model(loss=1.0)
    assert m.decide("1", NET, 0.0).action == "deliver"


def test_every_copy_lost_gives_up_after_the_last_redelivery() -> None:
    fate = model(loss=1.0, max_redeliveries=3).decide(NET, "1", 0.0)
    assert fate.gave_up and len(fate.lost) == 4


def test_faults_that_name_an_agent_the_run_lacks_are_refused() -> None:
    with pytest.raises(ConfigError, match="FAULT_SLOW_AGENT names agent"):
        network_faults(load_settings(fault_slow_agent="9", fault_slow_ms=100), "0123")


def test_settings_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAULT_LOSS", "0.05")
    monkeypatch.setenv("FAULT_PARTITION_AGENT", "1")
    monkeypatch.setenv("FAULT_PARTITION_FOR", "10")
    plan = FaultPlan.from_settings(load_settings(), "0123")
    assert plan.loss == 0.05 and plan.partition == Partition("1", 0.0, 10.0) and plan.active
    monkeypatch.setenv("FAULT_LOSS", "1.5")
    with pytest.raises(ValueError, match="between 0 and 1"):
        load_settings()


# --- the core under faults -------------------------------------------------------------------
def faulty(**kw: Any) -> RelayCore:
    return core(faults=model(**kw))


def everything(outs: list[Outcome]) -> tuple[list[FrameRecord], list[tuple[str, bytes]]]:
    records = [r for o in outs for r in o.records]
    sends = [(d, s.blob) for o in outs for s in o.sends for d in s.dst]
    return records, sends


def counters_equal_records(c: RelayCore, outs: list[Outcome]) -> None:
    again = Totals()
    for r in everything(outs)[0]:
        again.add(r)
    assert again == c.totals


def run_until(c: RelayCore, outs: list[Outcome], until: float) -> None:
    """Play the transport: tick whenever an outcome asks, in time order, up to ``until``."""
    wakes = [o.wake_at for o in outs if o.wake_at is not None]
    while wakes:
        at = min(wakes)
        wakes.remove(at)
        if at > until:
            break
        outs.append(c.tick(at))
        if outs[-1].wake_at is not None:
            wakes.append(outs[-1].wake_at)


def test_without_faults_the_core_sends_and_logs_as_it_always_did() -> None:
    c = core()
    outs = [c.start("The farm has 148 MW. " * 30, "How big?", 400, now=1.0)]
    outs += [c.receive(src, frame(c, src), now=2.0 + i) for i, src in enumerate("0123")]
    assert all(o.wake_at is None for o in outs)  # no ticks asked for
    # one send per frame, to every receiver at once, and the same lines as before faults existed
    assert [len(o.sends) for o in outs] == [1, 1, 1, 1, 1] and outs[0].sends[0].dst == ("0", "1", "2", "3")
    old = ["n", "t_ms", "src", "dst", "size", "rx_bytes", "tx_bytes", "header_size", "status", "b64", "type", "tag",
           "token_used", "seq", "error", "decode_us"]  # fmt: skip
    assert all(list(json.loads(r.to_json())) == old for o in outs for r in o.records)


def test_latency_holds_each_copy_and_records_it() -> None:
    c = faulty(latency_ms=50, jitter_ms=20)
    outs = [c.start("The farm has 148 MW. " * 30, "How big?", 400, now=1.0)]
    assert not outs[0].sends and outs[0].wake_at is not None  # every copy is on its way
    (init,) = outs[0].records
    assert init.fault is not None and init.fault.causes == ["latency"] and set(init.fault.out_ms) == set("0123")
    assert all(30 <= ms <= 70 for ms in init.fault.out_ms.values()) and init.dst == list("0123")
    run_until(c, outs, 1.1)
    assert sorted(d for d, _ in everything(outs)[1]) == list("0123")
    counters_equal_records(c, outs)


def test_a_frame_in_is_taken_in_when_its_link_delivers_it() -> None:
    c = faulty(slow_node="3", slow_ms=500)
    outs = [c.start("doc", "q?", 400, now=0.0)]
    run_until(c, outs, 1.0)
    answer = c.receive("3", frame(c, "3"), now=2.0)
    assert not answer.records and answer.wake_at == pytest.approx(2.5) and c.end is None
    outs.append(answer)
    outs.append(c.tick(2.5))
    (r,) = outs[-1].records
    assert r.t_ms == pytest.approx(2500) and r.fault is not None and r.fault.in_ms == 500
    assert c.end is not None and c.end.status == "ok" and c.elapsed_ms(9.0) == pytest.approx(2500)
    counters_equal_records(c, outs)


class Scripted(FaultModel):
    """The real model on a good network, but the next copy to ``node`` is lost ``times`` times
    (redelivered ``after`` seconds apart), or every time (``times`` past the limit)."""

    def __init__(self, node: str, times: int, after: float = 0.5, limit: int = 8) -> None:
        super().__init__(FaultPlan(redeliver_after=after, max_redeliveries=limit))
        self.node, self.times = node, times

    def decide(self, src: str, dst: str, t: float) -> Fate:
        fate = super().decide(src, dst, t)
        if dst != self.node or self.times == 0:
            return fate
        n = min(self.times, self.plan.max_redeliveries + 1)
        self.times = 0
        sent = t + n * self.plan.redeliver_after
        self._last[(src, dst)] = sent  # as the model keeps its links in order
        lost = tuple(t + i * self.plan.redeliver_after for i in range(n))
        return Fate(fate.order, sent, sent, lost, n > self.plan.max_redeliveries, ("loss",))


def blob_of(r: FrameRecord) -> bytes:
    return base64.b64decode(r.b64)


def test_a_lost_copy_is_logged_then_redelivered_and_the_counters_stay_the_sum_of_the_log() -> None:
    c = core(faults=Scripted("1", times=2))
    outs = [c.start("doc", "q?", 400, now=0.0)]
    init, lost = outs[0].records
    assert (init.status, init.dst) == ("accepted", ["0", "2", "3"])
    assert (lost.status, lost.dst, lost.rx_bytes, lost.tx_bytes) == ("dropped_fault", ["1"], 0, init.size)
    assert lost.fault is not None and lost.fault.attempt == 1 and outs[0].wake_at == pytest.approx(0.5)
    run_until(c, outs, 100.0)
    records, sends = everything(outs)
    assert [(r.status, r.t_ms) for r in records[1:]] == [("dropped_fault", 0.0), ("dropped_fault", 500.0),
                                                         ("redelivered", 1000.0)]  # fmt: skip
    again = records[-1]
    assert (again.src, again.dst) == (NET, ["1"]) and again.fault is not None and again.fault.causes == ["loss"]
    assert [d for d, blob in sends if blob == blob_of(init)] == ["0", "2", "3", "1"]  # once each
    assert c.totals.pkt_cnt == 2 and c.agents["1"].pkts_received == 1 and c.totals.token_sum == 0
    assert c.totals.bytes_tx == 6 * init.size  # three copies, two lost on the way, one redelivered
    counters_equal_records(c, outs)


def test_a_copy_lost_every_time_ends_the_run_frame_lost() -> None:
    c = core(faults=Scripted("1", times=99, limit=3))
    outs = [c.start("doc", "q?", 400, now=0.0)]
    run_until(c, outs, 100.0)
    assert c.end is not None and c.end.status == "frame_lost" and "to agent 1" in (c.end.error or "")
    assert c.done_at == pytest.approx(1.5)  # the fourth copy, lost at 1.5 s: no hang
    assert [r.fault.attempt for r in everything(outs)[0] if r.fault and r.status == "dropped_fault"] == [1, 2, 3, 4]
    counters_equal_records(c, outs)


def test_a_copy_behind_a_lost_one_waits_for_its_redelivery() -> None:
    """Links keep order: the document's copy to 1 was lost, so search's frame to 1 waits for the
    document's redelivery (an agent must have the document before its input)."""
    c = core(faults=Scripted("1", times=1))
    outs = [c.start("doc", "q?", 400, now=0.0), c.receive("0", frame(c, "0"), now=0.1)]
    assert "1" not in [d for s in outs[1].sends for d in s.dst]
    run_until(c, outs, 10.0)
    to_one = [blob for d, blob in everything(outs)[1] if d == "1"]
    records = everything(outs)[0]
    assert to_one == [blob_of(records[0]), blob_of(records[2])]  # doc_init first, then search_docs
    counters_equal_records(c, outs)


def test_a_lost_copy_to_an_agent_that_died_meanwhile_is_not_redelivered_to_it() -> None:
    c = core(faults=Scripted("1", times=1))
    outs = [c.start("doc", "q?", 400, now=0.0), c.lost("1", "killed", now=0.2)]
    run_until(c, outs, 10.0)
    assert "redelivered" not in [r.status for r in everything(outs)[0]]
    assert c.end is not None and c.end.status == "agent_dead"  # as without faults: no extract left


def test_seeded_loss_redelivers_every_lost_copy_once() -> None:
    c = faulty(loss=0.3, seed=5)
    outs = [c.start("doc", "q?", 400, now=0.0)]
    for i, src in enumerate("0123"):
        run_until(c, outs, 10.0 * (i + 1))
        outs.append(c.receive(src, frame(c, src), now=10.0 * (i + 1) + 0.5))
    run_until(c, outs, 100.0)
    records, sends = everything(outs)
    dropped = [r for r in records if r.status == "dropped_fault"]
    assert dropped and c.end is not None and c.end.status == "ok"
    for r in records:  # every copy that was lost reached its agent in the end
        if r.status == "dropped_fault" and not any(x.status == "dropped_fault" and x.n > r.n and x.dst == r.dst
                                                   and x.b64 == r.b64 for x in records):  # fmt: skip
            assert (r.dst[0], blob_of(r)) in sends or c.end is not None
    counters_equal_records(c, outs)


def test_an_agent_partitioned_gets_nothing_until_it_heals_and_the_run_finishes() -> None:
    c = faulty(partition=Partition("1", 0.0, 10.0))
    outs = [c.start("doc", "q?", 400, now=0.0)]
    assert [d for s in outs[0].sends for d in s.dst] == ["0", "2", "3"]
    outs.append(c.receive("0", frame(c, "0"), now=1.0))
    run_until(c, outs, 9.9)
    assert "1" not in [d for d, _ in everything(outs)[1]]
    run_until(c, outs, 10.0)
    assert [d for d, _ in everything(outs)[1]].count("1") == 2  # doc_init, then search_docs: in order
    for t, src in ((11.0, "1"), (12.0, "2"), (13.0, "3")):
        outs.append(c.receive(src, frame(c, src), now=t))
    assert c.end is not None and c.end.status == "ok"
    records = everything(outs)[0]
    assert records[0].fault is not None and records[0].fault.out_ms == {"1": 10000.0}
    counters_equal_records(c, outs)


def test_frames_still_held_when_the_run_ends_are_logged_not_lost() -> None:
    c = faulty(slow_node="2", slow_ms=500)
    outs = [c.start("doc", "q?", 400, now=0.0)]
    run_until(c, outs, 1.0)
    outs.append(c.receive("2", frame(c, "2"), now=2.0))  # held until 2.5
    outs.append(c.receive("3", frame(c, "3"), now=2.1))  # the final answer ends the run
    refused = [r for r in outs[-1].records if r.status == "rejected"]
    assert c.end is not None and c.end.status == "ok" and len(refused) == 1
    assert refused[0].src == "2" and "network faults held this frame" in (refused[0].error or "")
    counters_equal_records(c, outs)


def test_the_fault_field_is_written_only_when_there_is_one() -> None:
    c = faulty(latency_ms=10)
    out = c.start("doc", "q?", 400, now=0.0)
    assert b'"fault":{"causes":["latency"]' in out.records[0].to_json()
    assert FOUR and b'"fault"' not in core().start("doc", "q?", 400, now=0.0).records[0].to_json()


# --- the relay under faults: real sockets, real agents, a fast fake model ------------------
async def test_a_run_under_every_fault_answers_as_calm_and_its_log_agrees(tmp_path: Path) -> None:
    from gaiamesh.evaluation.audit import audit
    from gaiamesh.evaluation.metrics import read_log

    from ...conftest import free_port_block
    from .test_relay import TOOLS, run, settings_for

    calm = await run(tmp_path / "calm", settings_for(tmp_path / "calm", free_port_block(4), TOOLS))
    faults = dict(fault_latency_ms=30, fault_jitter_ms=20, fault_loss=0.3, fault_redeliver_after=0.2,
                  fault_partition_agent="2", fault_partition_for=0.8, fault_slow_agent="3", fault_slow_ms=300,
                  fault_seed=4)  # fmt: skip
    s = settings_for(tmp_path / "faults", free_port_block(4), TOOLS, **faults)
    got = await run(tmp_path / "faults", s)
    assert got["status"] == "ok" and got["prediction"] == calm["prediction"]
    assert got["elapsed_ms"] > calm["elapsed_ms"] + 800  # the partition alone holds 0.8 s
    records = read_log(tmp_path / "faults/out/frames.jsonl")
    causes = {c for r in records if r.fault for c in r.fault.causes}
    assert {"latency", "partition", "slow", "loss"} <= causes
    # each lost copy is redelivered once, when it gets through; but not the final answer's: the
    # run ended with it (as without faults, nobody waits for its copies)
    lost = {(r.dst[0], r.b64) for r in records if r.status == "dropped_fault" and r.type != "data_event"}
    again = [(r.dst[0], r.b64) for r in records if r.status == "redelivered"]
    assert lost and sorted(again) == sorted(lost)
    assert all(a == b for _, a, b in audit(tmp_path / "faults/out"))


# --- the bench's arithmetic ---------------------------------------------------------------
def test_the_bench_summary_compares_each_fault_with_the_same_tasks_calm() -> None:
    from gaiamesh.bench.storms.faults import FaultRun, summarize

    def r(fault: str, task: str, q: float, ms: float, status: str = "ok", again: int = 0) -> FaultRun:
        return FaultRun("json", fault, task, status, "148 MW" if q else "", q, int(q == 1), ms, again, again, 3,
                        True, "")  # fmt: skip

    runs = [r("calm", "a", 1.0, 1000), r("calm", "b", 0.5, 2000), r("loss", "a", 1.0, 1600, again=2),
            r("loss", "b", 0.0, 2200, "frame_lost")]  # fmt: skip
    calm, loss = summarize(runs)
    assert (calm["retained"], calm["time_added_ms"], calm["not_ok"]) == (1.0, 0.0, {})
    assert loss["retained"] == pytest.approx(0.5 / 0.75, abs=1e-4) and loss["time_added_ms"] == 400
    assert loss["time_added_mean_ms"] == 400
    assert loss["redelivered"] == 2 and loss["not_ok"] == {"b": "frame_lost"} and loss["same_answer"] == 1


def test_the_bench_checks_its_faults_before_it_runs_and_starts_each_from_none() -> None:
    from gaiamesh.bench.storms.faults import checked, grid

    s = load_settings(fault_latency_ms=99, fault_redeliver_after=0.3)  # as if .env set them
    full = checked(s, grid())
    assert full["calm"]["fault_latency_ms"] == 0 and full["loss"]["fault_latency_ms"] == 0
    assert full["latency"]["fault_latency_ms"] == 50 and "fault_redeliver_after" not in full["loss"]
    with pytest.raises(ConfigError, match="FAULT_SLOW_AGENT names agent"):
        checked(s, grid(slow_agent="7"))
    with pytest.raises(ConfigError, match="fault 'loss': fault_loss"):
        checked(s, grid(loss=2.0))


def test_the_task_is_mixed_into_the_seed() -> None:
    def delays(task: str) -> list[float]:
        m = FaultModel(FaultPlan(latency_ms=50, jitter_ms=20, salt=task))
        return [m.decide(NET, "1", float(t)).delay_ms for t in range(5)]

    assert delays("a") == delays("a") and delays("a") != delays("b")
