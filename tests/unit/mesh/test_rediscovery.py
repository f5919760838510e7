"""Replicas found or gone while a run goes on (``dns:`` entries looked up every DISCOVERY_INTERVAL).

The decisions by plain calls: :func:`reconcile` (what a look-up changes), the router and the core
(a replica joins, takes work, is let go). The relay with real agents on 127.0.0.1 / 127.0.0.2
behind one name, answered by a resolver the test changes mid-run, is in ``test_discovery.py``."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gaiamesh.agents.catalog import subscriptions
from gaiamesh.evaluation.metrics import RunMetrics
from gaiamesh.mesh.discovery import Change, reconcile
from gaiamesh.mesh.records import AgentMetrics, MemberEvent
from gaiamesh.mesh.routing import Router, RoutingMode
from gaiamesh.settings import AgentSpec, load_settings, parse_agents

from .test_core import FOUR, core, counters_equal_records, frame

ENTRIES = parse_agents("0=search@h:9000,3=reason@dns:tasks.reason:9003")
A = AgentSpec("3.10-0-0-1", "reason", "10.0.0.1", 9003, False, "3")
B = AgentSpec("3.10-0-0-2", "reason", "10.0.0.2", 9003, False, "3")
STATIC = ENTRIES[0]


def known(*specs: AgentSpec) -> dict[str, AgentSpec]:
    return {s.node_id: s for s in (STATIC, *specs)}


# --- reconcile: what one look-up changes ------------------------------------------------------


def test_a_new_address_joins_and_a_known_one_does_not() -> None:
    got = reconcile(ENTRIES, {"tasks.reason": ["10.0.0.2", "10.0.0.1"]}, known(A), {"0", A.node_id}, set())
    assert got == Change(joined=(B,))
    # already connected, or being connected: nothing to do
    assert reconcile(ENTRIES, {"tasks.reason": ["10.0.0.1", "10.0.0.2"]}, known(A), {"0", A.node_id, B.node_id},
                     set()) == Change()  # fmt: skip


def test_a_replica_is_let_go_only_when_its_address_is_gone_and_its_connection_down() -> None:
    active = {"0", A.node_id, B.node_id}
    only_b = {"tasks.reason": ["10.0.0.2"]}
    assert reconcile(ENTRIES, only_b, known(A, B), active, set()) == Change()  # connected: kept (a DNS blip)
    assert reconcile(ENTRIES, only_b, known(A, B), active, {A.node_id}) == Change(left=(A.node_id,))
    # down but still in DNS: the relay keeps trying to reach it
    assert reconcile(ENTRIES, {"tasks.reason": ["10.0.0.1", "10.0.0.2"]}, known(A, B), active, {A.node_id}) == Change()
    # a name that gives nothing at all lets every down replica of it go, not the agents without dns:
    assert reconcile(ENTRIES, {}, known(A, B), active, {A.node_id, "0"}) == Change(left=(A.node_id,))


def test_a_replica_let_go_whose_address_comes_back_joins_again_and_a_swap_is_both() -> None:
    active = {"0", B.node_id}  # A was let go
    assert reconcile(ENTRIES, {"tasks.reason": ["10.0.0.1", "10.0.0.2"]}, known(A, B), active, set()) == Change(
        joined=(A,)
    )
    # swarm moved the task: the old address is gone (its connection down), a new one is there
    got = reconcile(ENTRIES, {"tasks.reason": ["10.0.0.2"]}, known(A), {"0", A.node_id}, {A.node_id})
    assert got == Change(joined=(B,), left=(A.node_id,))


def test_a_replica_id_that_another_entry_holds_does_not_join() -> None:
    entries = parse_agents("3.10-0-0-1=reason@h:9100,3=reason@dns:tasks.reason:9003")
    clash = {entries[0].node_id: entries[0]}
    assert reconcile(entries, {"tasks.reason": ["10.0.0.1"]}, clash, set(clash), set()) == Change()


def test_discovery_interval_is_a_setting_that_zero_turns_off() -> None:
    assert load_settings().discovery_interval == 2.0
    assert load_settings(discovery_interval=0).discovery_interval == 0
    with pytest.raises(ValidationError, match="must not be negative"):
        load_settings(discovery_interval=-1)


# --- the router and the core ------------------------------------------------------------------


def test_auto_routing_turns_to_share_when_a_tool_gets_a_second_live_agent() -> None:
    r = Router(RoutingMode.AUTO, FOUR)
    r.add("9", "utility")  # a tool with one agent
    assert r.mode is RoutingMode.BROADCAST
    r.remove("3")
    r.add("3.y", "reason")  # replaces a lost one: still one live reason agent
    assert r.mode is RoutingMode.BROADCAST
    r.add("3.z", "reason")
    assert r.mode is RoutingMode.SHARE and r.members("reason") == ["3.y", "3.z"]
    r.remove("3.z")
    assert r.mode is RoutingMode.SHARE  # never back: a run that shared keeps sharing
    topic = Router(RoutingMode.TOPIC, FOUR)
    topic.add("3.z", "reason")
    assert topic.mode is RoutingMode.TOPIC  # only auto follows the line-up


def test_a_replica_that_joins_gets_the_run_and_its_share_of_the_work() -> None:
    c = core(FOUR, origin=-1.0)
    outs = [c.start("doc", "q?", 400, 0.0)]
    outs.append(c.join("3.b", "reason", 1.0, subscriptions()["reason"], stamps="3"))
    (r,) = outs[-1].records
    assert (r.type, r.status, r.dst) == ("doc_init", "redelivered", ["3.b"])
    assert c.router.mode is RoutingMode.SHARE and "routing broadcast -> share" in outs[-1].notes[-1]
    assert c.agents["3.b"] == AgentMetrics("3.b", "reason", "connected", pkts_received=1,
                                           bytes_received=r.size, note="joined at 1000 ms")  # fmt: skip
    # the triples go to one reason agent at a time, in turn: the new one takes its share
    takers = []
    for seq in range(1, 5):
        out = c.receive("2", frame(c, "2", seq=seq), 1.0 + seq)
        takers += [n for send in out.sends for n in send.dst if c.router.tool_of(n) == "reason"]
        outs.append(out)
    assert sorted(set(takers)) == ["3", "3.b"] and len(takers) == 4
    # its answer is counted under its own id, stamped with the entry's
    outs.append(c.receive("3.b", frame(c, "3.b", src="3"), 6.0))
    assert outs[-1].end is not None and outs[-1].end.status == "ok"
    assert c.agents["3.b"].pkts_sent == 1
    assert c.membership == [MemberEvent(2000.0, "3.b", "reason", "joined")]  # t_ms from the origin
    counters_equal_records(c, outs)


def test_a_lost_replica_replaced_by_a_new_one_hands_it_the_waiting_work_then_is_let_go() -> None:
    """Swarm reschedules a task on another node: the old replica's connection drops (its work
    waits, REJOIN_GRACE), the new address joins and takes it, the old one is let go."""
    c = core(FOUR, rejoin_grace=10.0)
    outs = [c.start("doc", "q?", 400, 0.0)]
    outs.append(c.receive("2", frame(c, "2"), 1.0))  # the triples are reason's work in flight
    outs.append(c.lost("3", "connection closed (1006)", 2.0))
    assert outs[-1].end is None and "waiting up to 10s" in outs[-1].notes[-1]
    outs.append(c.join("3.new", "reason", 3.5, subscriptions()["reason"]))
    types = [(r.type, r.status, r.dst) for r in outs[-1].records]
    assert types == [("doc_init", "redelivered", ["3.new"]), ("triples", "redelivered", ["3.new"])]
    assert c.router.mode is RoutingMode.BROADCAST  # one live reason agent: auto stays
    outs.append(c.leave("3", "its address left DNS", 4.0))
    assert c.agents["3"].status == "left" and c.agents["3"].note.endswith("let go at 4000 ms: its address left DNS")
    assert "agent 3 (reason) let go" in outs[-1].notes[0]
    assert c.lost("3", "again", 4.1).records == [] and c.agents["3"].status == "left"
    assert c.tick(12.1).end is None  # nothing waits for the grace any more
    outs.append(c.receive("3.new", frame(c, "3.new"), 5.0))
    assert outs[-1].end is not None and outs[-1].end.status == "ok"
    assert [(e.node_id, e.event, e.t_ms) for e in c.membership] == [
        ("3", "lost", 2000.0), ("3.new", "joined", 3500.0), ("3", "left", 4000.0)
    ]  # fmt: skip
    counters_equal_records(c, outs)


def test_a_connected_agent_is_not_let_go_and_one_let_go_can_join_again_with_its_counts() -> None:
    c = core(FOUR)
    c.start("doc", "q?", 400, 0.0)
    assert c.leave("3", "gone", 1.0).notes == [] and c.agents["3"].status == "connected"
    c.receive("2", frame(c, "2"), 1.5)
    received = c.agents["3"].pkts_received
    c.lost("3", "closed", 2.0)  # its work is redelivered to no one: the run ends agent_dead
    c.leave("3", "gone", 2.5)
    c.join("3", "reason", 3.0, subscriptions()["reason"])
    assert c.agents["3"].status == "connected" and c.agents["3"].pkts_received == received


def test_metrics_json_carries_the_membership_typed_and_old_files_still_read() -> None:
    base = {"status": "ok", "task_id": "t", "question": "q", "answer": "a", "model": "m"}
    assert RunMetrics.model_validate(base).membership == []
    m = RunMetrics.model_validate({**base, "membership": [{"t_ms": 1.5, "node_id": "3.b", "tool": "reason",
                                                             "event": "joined"}]})  # fmt: skip
    assert m.membership == [MemberEvent(1.5, "3.b", "reason", "joined")]
    with pytest.raises(ValidationError):
        RunMetrics.model_validate({**base, "membership": [{"t_ms": 1, "node_id": "x", "tool": "t", "event": "gone"}]})
    assert "membership" not in RunMetrics.columns()


def test_outages_run_from_a_loss_to_the_next_agent_of_its_tool() -> None:
    from gaiamesh.evaluation.metrics import outages_ms
    from gaiamesh.mesh.records import MemberEvent

    events = [MemberEvent(100.0, "1.a", "extract", "lost"), MemberEvent(150.0, "2.b", "triple", "lost"),
              MemberEvent(2100.0, "1.a", "extract", "left"), MemberEvent(9100.0, "1.c", "extract", "joined"),
              MemberEvent(9500.0, "1.c", "extract", "lost"), MemberEvent(9700.0, "1.c", "extract", "rejoined")]  # fmt: skip
    assert outages_ms(events) == {"extract": 9000.0}  # triple never came back: not counted
