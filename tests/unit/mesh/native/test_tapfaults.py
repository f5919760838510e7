"""The native wire's network faults, decided by plain calls (mesh/native/tapfaults.py)."""

from __future__ import annotations

from gaiamesh.mesh.faults import FaultPlan, Partition
from gaiamesh.mesh.native.tapfaults import TapFaults


def test_latency_jitter_and_a_slow_agent_delay_every_chunk_in_order() -> None:
    plan = FaultPlan(latency_ms=50, jitter_ms=20, slow_node="2", slow_ms=100, seed=3)
    faults = TapFaults(plan, "2")
    starts = [t / 1000 for t in range(0, 500, 50)]
    times = [faults.release_at(True, t) for t in starts]
    assert all(0.130 - 1e-9 <= at - t <= 0.170 + 1e-9 for t, at in zip(starts, times, strict=True))
    assert times == sorted(times)  # a chunk never overtakes the one before
    again = TapFaults(plan, "2")
    assert [again.release_at(True, t) for t in starts] == times  # seeded: the same run meets the same faults
    crowded = TapFaults(plan, "2")
    first, second = crowded.release_at(True, 0.0), crowded.release_at(True, 0.0)
    assert second >= first  # in order even when the second drew less jitter


def test_a_partition_holds_until_it_ends_and_only_its_agent() -> None:
    plan = FaultPlan(partition=Partition("1", 2.0, 5.0))
    assert TapFaults(plan, "1").release_at(False, 3.0) == 5.0
    assert TapFaults(plan, "1").release_at(False, 6.0) == 6.0
    assert TapFaults(plan, "0").release_at(False, 3.0) == 3.0


def test_loss_draws_per_request_on_the_named_links_only() -> None:
    plan = FaultPlan(loss=0.5, links=frozenset({"1"}), seed=7)
    draws = TapFaults(plan, "1")
    share = sum(draws.lose_request() for _ in range(2000)) / 2000
    assert 0.45 < share < 0.55
    assert not any(TapFaults(plan, "0").lose_request() for _ in range(100))
    assert not TapFaults(FaultPlan(), "1").active
