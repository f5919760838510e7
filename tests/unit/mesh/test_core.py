"""RelayCore by plain calls: no sockets, no event loop, time passed in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gaiamesh.agents.catalog import subscriptions
from gaiamesh.mesh.core import RelayCore
from gaiamesh.mesh.frames import PacketType, make_packet
from gaiamesh.mesh.outcome import Outcome
from gaiamesh.mesh.protocols import generate_keys, get_adapter
from gaiamesh.mesh.records import Totals
from gaiamesh.mesh.routing import RoutingMode

FOUR = [("0", "search"), ("1", "extract"), ("2", "triple"), ("3", "reason")]
EIGHT = FOUR + [("4", "search"), ("5", "extract"), ("6", "triple"), ("7", "reason")]
PAYLOADS: dict[PacketType, dict[str, Any]] = {
    PacketType.SEARCH_DOCS: {"passages": [{"chunk": 0, "score": 1.0, "text": "The farm has 148 MW."}], "n_chunks": 1},
    PacketType.EVENTS: {"facts": [{"text": "The farm has 148 MW.", "score": 1.0, "candidate": "148 MW"}]},
    PacketType.TRIPLES: {"triples": [], "facts": [{"text": "The farm has 148 MW.", "score": 1.0}]},
    PacketType.DATA_EVENT: {
        "answer": "148 MW", "method": "reading", "question": "q?", "reading": "148 MW", "candidates": [],
        "facts_used": 1, "triples_seen": 0,
    },
    PacketType.ERROR: {"tool": "extract", "error": "bad input", "on": "search_docs"},
}  # fmt: skip
EMITS = {"search": PacketType.SEARCH_DOCS, "extract": PacketType.EVENTS, "triple": PacketType.TRIPLES,
         "reason": PacketType.DATA_EVENT}  # fmt: skip


def core(lineup: list[tuple[str, str]] = FOUR, mode: RoutingMode = RoutingMode.AUTO, **kw: Any) -> RelayCore:
    c = RelayCore("run1", kw.pop("adapter", get_adapter("json")), lineup, mode, **kw)
    subs = subscriptions()
    for node, tool in lineup:
        c.register(node, subs[tool])
    return c


def frame(
    c: RelayCore, sender: str, ptype: PacketType | None = None, adapter: Any = None, **kw: Any
) -> bytes:
    """An encoded packet from ``sender`` of the type its tool emits; ``kw`` overrides envelope fields."""
    ptype = ptype or EMITS[c.router.tool_of(sender)]
    tag = "final_answer" if ptype is PacketType.DATA_EVENT else None
    fields = {"run_id": c.run_id, "src": sender, "seq": 1, "tag": tag, "token_used": 10, **kw}
    packet = make_packet(ptype, PAYLOADS[ptype], **fields)
    return (adapter or c.adapter).encode(packet.to_dict())


def counters_equal_records(c: RelayCore, outcomes: list[Outcome]) -> None:
    """Folding every record the core emitted gives exactly the core's counters."""
    again = Totals()
    for out in outcomes:
        for r in out.records:
            again.add(r)
    assert again == c.totals


def test_a_whole_run_by_plain_calls_broadcast() -> None:
    c = core()
    outs = [c.start("The farm has 148 MW. " * 30, "How big?", 400, now=1.0)]
    assert outs[0].sends[0].dst == ("0", "1", "2", "3") and outs[0].records[0].type == "doc_init"
    for t, src in enumerate("0123", start=2):
        outs.append(c.receive(src, frame(c, src), now=float(t)))
        assert outs[-1].sends[0].dst == tuple(n for n in "0123" if n != src)  # broadcast: all others
    assert outs[-1].end is not None and outs[-1].end.status == "ok"
    assert c.final is not None and c.final.payload.answer == "148 MW"
    assert c.elapsed_ms(now=99.0) == pytest.approx(4000.0)  # doc_init at 1 s, answer at 5 s
    assert c.totals.pkt_cnt == 5 and c.totals.token_sum == 40
    assert c.totals.bytes_tx == sum(len(s.blob) * len(s.dst) for o in outs for s in o.sends)
    assert c.agents["3"].token_used == 10 and c.agents["0"].pkts_received == 4  # doc_init + 3
    counters_equal_records(c, outs)


def test_topic_routing_sends_only_to_consumers() -> None:
    c = core(mode=RoutingMode.TOPIC)
    dsts = [c.start("doc", "q?", 400, 0.0).sends[0].dst]
    for src in "012":
        dsts.append(c.receive(src, frame(c, src), 1.0).sends[0].dst)
    last = c.receive("3", frame(c, "3"), 2.0)
    assert dsts == [("0",), ("1",), ("2",), ("3",)] and last.sends == [] and last.end is not None


def test_share_routing_splits_work_between_replicas() -> None:
    c = core(EIGHT)
    assert c.router.mode is RoutingMode.SHARE
    assert c.start("doc", "q?", 400, 0.0).sends[0].dst == ("0",)
    assert c.receive("0", frame(c, "0"), 1.0).sends[0].dst == ("5",)


@pytest.mark.parametrize(
    ("blob", "error"),
    [
        (b"{not json", "json frame: malformed JSON"),
        (b"x" * 5000, "oversized frame: 5000 bytes > MAX_FRAME_BYTES=4096"),
        (b'{"type": "gossip", "run_id": "run1", "src": "0", "seq": 1}', "unknown packet type 'gossip'"),
        (b'{"type": "search_docs", "run_id": "run1", "src": "0", "seq": 1, "payload": {}}',
         "invalid packet field 'payload.passages': Field required"),
    ],
)  # fmt: skip
def test_rejections_are_recorded_counted_and_route_nothing(blob: bytes, error: str) -> None:
    c = core(max_frame_bytes=4096)
    start = c.start("doc", "q?", 400, 0.0)
    out = c.receive("0", blob, 1.0)
    assert out.sends == [] and out.end is None
    (r,) = out.records
    assert r.status == "rejected" and r.error is not None and r.error.startswith(error)
    assert c.totals.rejected_cnt == 1 and c.agents["0"].rejected == 1 and c.totals.bytes_rx == len(blob)
    counters_equal_records(c, [start, out])


def test_envelope_rejections() -> None:
    c = core()
    c.start("doc", "q?", 400, 0.0)
    spoofed = c.receive("0", frame(c, "0", src="3"), 1.0).records[0].error
    stale = c.receive("0", frame(c, "0", run_id="old-run"), 1.0).records[0].error
    forged_init = c.receive("0", get_adapter("json").encode(
        make_packet(PacketType.DOC_INIT, {"chunks": ["x"]}, run_id="run1", src="0", seq=1).to_dict()), 1.0
    ).records[0].error  # fmt: skip
    assert spoofed == "packet claims src '3' but arrived from agent '0'"
    assert stale == "packet belongs to run 'old-run', not the current run 'run1'"
    assert forged_init == "doc_init comes from the relay only"
    assert c.totals.rejected_cnt == 3 and c.totals.pkt_cnt == 1


def test_signed_frames_are_verified_by_the_core(tmp_path: Path) -> None:
    keys = generate_keys(tmp_path, ["network", "0", "1", "2", "3"])
    c = core(adapter=get_adapter("signed", "network", keys))
    c.start("doc", "q?", 400, 0.0)
    good = frame(c, "0", adapter=get_adapter("signed", "0", keys))
    bad = c.receive("0", good[:-3] + b"xyz", 1.0).records[0]
    ok = c.receive("0", good, 1.0).records[0]
    assert bad.status == "rejected" and bad.error == "signed: bad signature on a frame from '0'"
    assert ok.status == "accepted" and ok.header_size == 84 + 1  # magic, version, id length, id, time, nonce, signature


def test_frames_after_the_end_are_on_the_books_but_go_nowhere() -> None:
    c = core()
    c.start("doc", "q?", 400, 0.0)
    c.receive("3", frame(c, "3"), 1.0)
    late = c.receive("1", frame(c, "1"), 2.0)
    assert late.sends == [] and late.records[0].status == "rejected"
    assert late.records[0].error == "run run1 already ended (ok)"


def test_an_error_packet_ends_the_run_with_the_agents_reason() -> None:
    c = core()
    c.start("doc", "q?", 400, 0.0)
    out = c.receive("1", frame(c, "1", PacketType.ERROR), 1.0)
    assert out.end is not None and out.end.status == "agent_error"
    assert out.end.error == "agent 1 (extract) failed: bad input"
    assert out.records[0].status == "accepted" and out.sends == []


def test_an_agent_that_cannot_reach_the_model_server_ends_the_run_model_unreachable() -> None:
    c = core()
    c.start("doc", "q?", 400, 0.0)
    failure = {"tool": "extract", "error": "model server unreachable at http://m:11434", "on": "search_docs",
               "kind": "model_unreachable"}  # fmt: skip
    packet = make_packet(PacketType.ERROR, failure, run_id=c.run_id, src="1", seq=1, token_used=0)
    out = c.receive("1", c.adapter.encode(packet.to_dict()), 1.0)
    assert out.end is not None and out.end.status == "model_unreachable"
    assert out.end.error == "agent 1 (extract) failed: model server unreachable at http://m:11434"


def test_a_dead_agents_work_is_redelivered_to_a_live_replica() -> None:
    c = core(EIGHT)
    outs = [c.start("doc", "q?", 400, 0.0), c.receive("0", frame(c, "0"), 1.0)]  # search_docs -> 5
    assert outs[-1].sends[0].dst == ("5",)
    outs.append(c.lost("5", "connection closed (1006)", 2.0))
    (r,) = outs[-1].records
    assert r.status == "redelivered" and r.dst == ["1"] and r.src == "network" and r.type == "search_docs"
    assert outs[-1].sends[0].dst == ("1",) and outs[-1].sends[0].blob == outs[1].sends[0].blob
    assert c.agents["5"].status == "dead" and "1006" in c.agents["5"].note
    assert c.totals.token_sum == 10  # the redelivery is not a second answer
    # the replica answers: the run goes on through live agents only
    outs.append(c.receive("1", frame(c, "1"), 3.0))
    assert "5" not in outs[-1].sends[0].dst
    counters_equal_records(c, outs)


def test_a_restarted_agent_rejoins_gets_the_run_again_and_carries_traffic() -> None:
    c = core(EIGHT, RoutingMode.SHARE)
    outs = [c.start("doc", "q?", 400, 0.0)]
    outs.append(c.lost("6", "connection closed (1006)", 1.0))
    assert "6" not in c.router.live and c.agents["6"].status == "dead"
    outs.append(c.rejoin("6", 2.5, subscriptions()["triple"]))
    (r,) = outs[-1].records
    assert (r.type, r.status, r.src, r.dst) == ("doc_init", "redelivered", "network", ["6"])
    assert outs[-1].sends[0].blob == outs[0].sends[0].blob  # the very doc_init of the run
    assert "agent 6 (triple) rejoined the run" in outs[-1].notes[0]
    assert "6" in c.router.live and c.agents["6"].status == "connected"
    # share routing among the triple replicas includes it again
    takers = set()
    for seq in range(2, 6):
        out = c.receive("1", frame(c, "1", seq=seq), 3.0 + seq)
        takers |= {n for send in out.sends for n in send.dst if c.router.tool_of(n) == "triple"}
        outs.append(out)
    assert takers == {"2", "6"}
    counters_equal_records(c, outs)


def test_a_returning_agent_whose_part_is_done_is_not_asked_again() -> None:
    c = core(EIGHT, RoutingMode.SHARE)
    c.start("doc", "q?", 400, 0.0)
    c.receive("0", frame(c, "0"), 1.0)  # search has answered
    c.lost("4", "connection closed", 2.0)
    out = c.rejoin("4", 3.0, subscriptions()["search"])
    assert out.records == [] and "4" in c.router.live  # no second doc_init: it would search again
    c.expire(4.0, 4)
    late = c.rejoin("5", 5.0)  # after the end: registered, nothing sent
    assert late.records == [] and late.notes == []


def test_with_a_grace_the_run_waits_for_a_lost_tool_and_hands_it_the_waiting_work() -> None:
    c = core(EIGHT, RoutingMode.SHARE, rejoin_grace=10.0)
    outs = [c.start("doc", "q?", 400, 0.0), c.lost("2", "gone", 0.5), c.lost("6", "gone", 0.6)]
    assert outs[-1].end is None and outs[-1].wake_at == 10.6 and "waiting up to 10s" in outs[-1].notes[-1]
    outs.append(c.receive("0", frame(c, "0"), 1.0))  # search_docs -> extract
    outs.append(c.receive(outs[-1].sends[0].dst[0], frame(c, outs[-1].sends[0].dst[0]), 2.0))  # events: no triple
    assert all(c.router.tool_of(n) != "triple" for send in outs[-1].sends for n in send.dst)
    assert c.tick(5.0).end is None  # still within the grace
    outs.append(c.rejoin("6", 6.0, subscriptions()["triple"]))
    types = [(r.type, r.status, r.dst) for r in outs[-1].records]
    assert types == [("doc_init", "redelivered", ["6"]), ("events", "redelivered", ["6"])]
    assert "takes over 1 waiting packet(s)" in outs[-1].notes[-1]
    outs.append(c.tick(11.0))
    assert outs[-1].end is None and c.end is None  # it came back: no end
    outs.append(c.receive("6", frame(c, "6"), 7.0))  # the run goes on through it
    assert outs[-1].sends and c.end is None
    counters_equal_records(c, outs)


def test_a_grace_that_runs_out_ends_the_run_with_the_reason() -> None:
    c = core(FOUR, rejoin_grace=3.0)
    c.start("doc", "q?", 400, 0.0)
    assert c.lost("2", "gone", 1.0).wake_at == 4.0
    assert c.tick(3.9).end is None
    out = c.tick(4.0)
    assert out.end is not None and out.end.status == "agent_dead"
    assert out.end.error == "no 'triple' agent is alive and none came back within REJOIN_GRACE=3s"


def test_a_dead_agent_without_replica_ends_the_run_when_its_tool_is_needed() -> None:
    c = core()
    c.start("doc", "q?", 400, 0.0)
    out = c.lost("2", "connection closed", 1.0)
    assert out.end is not None and out.end.status == "agent_dead"
    assert out.end.error == "agent 2 (triple) disconnected and no other 'triple' agent is alive"


def test_a_dead_agent_whose_part_is_done_does_not_end_the_run() -> None:
    c = core()
    c.start("doc", "q?", 400, 0.0)
    c.receive("0", frame(c, "0"), 1.0)
    assert c.lost("0", "connection closed", 2.0).end is None and c.end is None


def test_timeout_and_failure_end_the_run_once() -> None:
    c = core()
    c.start("doc", "q?", 400, 0.0)
    out = c.expire(300.0, 300)
    assert out.end is not None and out.end.error == "no final answer within RUN_TIMEOUT=300s"
    assert c.fail("connect_failed", "late", 301.0).end is None and c.end == out.end


def test_each_frame_that_comes_in_carries_the_time_its_decoding_took() -> None:
    ticks = iter([1.0, 1.000250, 2.0, 2.000040])  # the clock the core reads around each decode
    c = core(clock=lambda: next(ticks))
    c.start("The farm has 148 MW.", "q?", 500, now=0.0)
    good = c.receive("0", frame(c, "0"), now=0.1)
    bad = c.receive("1", b"{not json", now=0.2)
    assert [r.decode_us for r in good.records] == [250.0]
    assert [(r.status, r.decode_us) for r in bad.records] == [("rejected", 40.0)]  # rejecting costs too
    assert c.start("x", "q?", 500, now=0.3).records[0].decode_us is None  # the relay's own frame
