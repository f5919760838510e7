"""The coordinator's decisions by plain calls: dynamic and round-robin dispatch, the bound on
items in flight, an item whose worker is lost goes to another, and no item is lost or answered
twice whatever happens (a random schedule of answers, failures, losses and returns)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gaiamesh.errors import ConfigError
from gaiamesh.stream.dispatch import Dispatcher
from gaiamesh.stream.items import StreamItem
from gaiamesh.stream.summary import percentile, summarize


def items(n: int) -> list[StreamItem]:
    return [StreamItem(id=str(i), q=f"q{i}?") for i in range(n)]


def fill(d: Dispatcher, source: list[StreamItem], now: float = 0.0) -> None:
    while source and d.wants:
        d.add(source.pop(0), now)


def test_dynamic_dispatch_gives_the_next_item_to_the_worker_that_freed_up() -> None:
    d = Dispatcher(["a", "b"], "dynamic")
    source = items(5)
    fill(d, source)
    assert [(i.id, w) for i, w in d.assign(0.0)] == [("0", "a"), ("1", "b")]
    assert d.assign(0.1) == []  # one in flight per worker
    assert d.answered("1", "b", 1.0, "x")  # b is free first ...
    fill(d, source, 1.0)
    assert [(i.id, w) for i, w in d.assign(1.0)] == [("2", "b")]  # ... and takes the next


def test_round_robin_waits_for_the_worker_whose_turn_it_is() -> None:
    d = Dispatcher(["a", "b"], "round-robin")
    source = items(4)
    fill(d, source)
    assert [w for _, w in d.assign(0.0)] == ["a", "b"]
    d.answered("1", "b", 1.0, "x")
    fill(d, source, 1.0)
    assert d.assign(1.0) == []  # a's turn, and a is busy: the line waits (dynamic would use b)
    d.answered("0", "a", 2.0, "x")
    assert [(i.id, w) for i, w in d.assign(2.0)] == [("2", "a"), ("3", "b")]


def test_the_queue_reads_no_further_ahead_than_its_bound() -> None:
    d = Dispatcher(["a", "b", "c"], per_worker=2)
    assert d.wants == 6  # the workers' slots, by default
    fill(d, items(100))
    assert len(d.queue) == 6 and d.wants == 0
    d.assign(0.0)
    assert d.wants == 6 and all(len(w.in_flight) == 2 for w in d.workers.values())


def test_a_worker_the_relay_handed_an_item_away_from_takes_work_again() -> None:
    # In a storm a worker is killed and comes back; nothing tells the coordinator it returned,
    # so a move must not take the worker out of the line for good (every worker moved from
    # once would leave items queued with nobody to send them to).
    d = Dispatcher(["a", "b"])
    source = items(4)
    fill(d, source)
    d.assign(0.0)
    d.moved("0", "a", "b", 1.0)
    d.moved("1", "b", "a", 1.0)  # each moved from once
    assert all(w.alive for w in d.workers.values())
    assert d.answered("0", "b", 2.0, "zero") and d.answered("1", "a", 2.0, "one")
    fill(d, source, 2.0)
    sent = [(i.id, w) for i, w in d.assign(2.0)]
    assert sorted(i for i, _ in sent) == ["2", "3"] and {w for _, w in sent} == {"a", "b"}
    fate = d.fates["0"]
    assert [(a.worker, a.outcome) for a in fate.attempts] == [("a", "lost"), ("b", "answered")]


def test_a_lost_workers_item_goes_to_another_and_its_late_answer_is_a_duplicate() -> None:
    d = Dispatcher(["a", "b"])
    fill(d, items(2))
    d.assign(0.0)
    assert d.lost("a", 1.0) == ["0"]
    d.answered("1", "b", 1.5, "one")
    assert [(i.id, w) for i, w in d.assign(1.5)] == [("0", "b")]  # the lost item, to b
    assert d.answered("0", "b", 2.0, "zero")
    assert not d.answered("0", "a", 2.5, "zero, late")  # a came back to life and answered: not taken
    fate = d.fates["0"]
    assert (fate.prediction, fate.answered_by, fate.duplicates) == ("zero", "b", 1)
    s = summarize(list(d.fates.values()), ["a", "b"])
    assert (s.answered, s.retries, s.duplicates, s.lost_sends) == (2, 1, 1, 1)
    assert s.per_worker == {"a": 0, "b": 2} and s.worker_variance == 1.0


def test_an_item_that_fails_on_every_send_ends_failed_with_the_reason() -> None:
    d = Dispatcher(["a", "b"], max_attempts=2)
    fill(d, items(1))
    (item, w), = d.assign(0.0)
    d.failed("0", w, 1.0, "agent_error")
    (item, w2), = d.assign(1.0)
    assert w2 != w or len(d.workers) == 1
    d.failed("0", w2, 2.0, "agent_error")
    assert d.fates["0"].status == "failed" and "send 2 of 2" in d.fates["0"].why and d.idle


def test_bad_configuration_and_unknown_items_are_refused() -> None:
    with pytest.raises(ConfigError, match="each named once"):
        Dispatcher(["a", "a"])
    with pytest.raises(ConfigError, match="dispatch policy"):
        Dispatcher(["a"], "random")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="never sent"):
        Dispatcher(["a"]).answered("x", "a", 0.0, "?")


def test_percentiles_are_values_that_happened() -> None:
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 0.5), percentile(values, 0.95), percentile(values, 0.99)) == (50.0, 95.0, 99.0)
    assert percentile([3.0], 0.99) == 3.0


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10_000), n_items=st.integers(1, 60), n_workers=st.integers(1, 6),
       policy=st.sampled_from(["dynamic", "round-robin"]))  # fmt: skip
def test_no_item_is_lost_or_answered_twice_whatever_happens(seed: int, n_items: int, n_workers: int, policy: str) -> None:
    rng = random.Random(seed)
    workers = [f"w{i}" for i in range(n_workers)]
    d = Dispatcher(workers, policy, per_worker=rng.randint(1, 3), max_attempts=4)  # type: ignore[arg-type]
    source, now, flying = items(n_items), 0.0, list[tuple[str, str]]()
    for _ in range(20 * n_items + 100):
        now += 1.0
        fill(d, source, now)
        flying += [(i.id, w) for i, w in d.assign(now)]
        event = rng.random()
        if flying and event < 0.7:
            item_id, worker = flying.pop(rng.randrange(len(flying)))
            if rng.random() < 0.85:
                d.answered(item_id, worker, now, f"answer {item_id}")
            else:
                d.failed(item_id, worker, now, "agent_error")
        elif event < 0.8:
            alive = [w for w in workers if d.workers[w].alive]
            if len(alive) > 1:
                d.lost(rng.choice(alive), now)  # its sends stay in ``flying``: they may answer late
        elif event < 0.9:
            for w in workers:
                d.back(w, now)
        if not source and d.idle:
            break
    for w in workers:  # the end: every worker back, every answer still on its way delivered
        d.back(w, now)
    while not (not source and d.idle):
        now += 1.0
        fill(d, source, now)
        flying += [(i.id, w) for i, w in d.assign(now)]
        item_id, worker = flying.pop(0)
        d.answered(item_id, worker, now, f"answer {item_id}")
    for item_id, worker in flying:  # late answers of sends given up on
        d.answered(item_id, worker, now, "late")
    assert len(d.fates) == n_items  # none lost
    for fate in d.fates.values():
        assert fate.status in ("answered", "failed")
        answers = [a for a in fate.attempts if a.outcome == "answered"]
        assert len(answers) == (1 if fate.status == "answered" else 0)  # never answered twice
        assert fate.status == "failed" or fate.prediction == f"answer {fate.item.id}"
    s = summarize(list(d.fates.values()), workers)
    assert s.answered + s.failed == n_items and sum(s.per_worker.values()) == s.answered


def test_an_item_sent_again_waits_for_a_worker_that_has_not_had_it() -> None:
    d = Dispatcher(["a", "b"], max_attempts=2)
    source = items(3)
    fill(d, source)
    assert [(i.id, w) for i, w in d.assign(0.0)] == [("0", "a"), ("1", "b")]
    d.failed("0", "a", 1.0, "model down")  # a is free again, b is busy: 0 waits for b ...
    fill(d, source, 1.0)
    assert [(i.id, w) for i, w in d.assign(1.0)] == [("2", "a")]  # ... and the next item goes to a meanwhile
    d.answered("1", "b", 2.0, "one")
    assert [(i.id, w) for i, w in d.assign(2.0)] == [("0", "b")]
    assert d.answered("0", "b", 3.0, "zero") and [a.worker for a in d.fates["0"].sends] == ["a", "b"]


def test_an_empty_answer_is_told_and_counted_apart_from_an_answer() -> None:
    d = Dispatcher(["a", "b"], "dynamic")
    fill(d, items(2))
    d.assign(0.0)
    assert d.answered("0", "a", 1.0, "  \n")  # the worker's reply, with no text
    assert d.answered("1", "b", 2.0, "Paris")
    assert [d.fates[i].status for i in ("0", "1")] == ["empty", "answered"]
    d.lost("a", 2.5)  # nothing in flight on a: its empty item is told, not sent again
    assert d.fates["0"].status == "empty" and len(d.fates["0"].sends) == 1
    s = summarize(list(d.fates.values()), ["a", "b"])
    assert (s.items, s.answered, s.empty, s.failed, s.success_rate) == (2, 1, 1, 0, 0.5)
    assert s.latency is not None and s.latency.n == 2 and s.per_worker == {"a": 1, "b": 1}  # both replied
