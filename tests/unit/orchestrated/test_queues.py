"""The SubTaskQueue and ResultsQueue as relay topics, by plain calls to RelayCore."""

from __future__ import annotations

from typing import Any

import gaiamesh.orchestrated  # noqa: F401  (registers orchestrator, research, utility)
from gaiamesh.agents.catalog import readings, subscriptions
from gaiamesh.mesh.core import RelayCore
from gaiamesh.mesh.frames import PacketType, make_packet, parse_packet_json
from gaiamesh.mesh.outcome import Outcome
from gaiamesh.mesh.protocols import get_adapter
from gaiamesh.mesh.records import Totals
from gaiamesh.mesh.routing import RoutingMode

TEAM = [("o", "orchestrator"), ("r1", "research"), ("r2", "research"), ("u", "utility")]


def core(lineup: list[tuple[str, str]] = TEAM, mode: RoutingMode = RoutingMode.AUTO) -> RelayCore:
    c = RelayCore("run1", get_adapter("json"), lineup, mode)
    subs, reads = subscriptions(), readings()
    for node, tool in lineup:
        c.register(node, subs[tool], reads[tool])
    return c


def subtask(c: RelayCore, sid: str, role: str = "research", src: str = "o") -> bytes:
    body = {"sub_task_id": sid, "parent_task_id": "run1", "assigned_agent_role": role, "tool_name": "find_fact",
            "sub_task_input": {"query": "opened", "answer_type": "year"}}  # fmt: skip
    return c.adapter.encode(make_packet(PacketType.SUBTASK, body, run_id="run1", src=src, seq=1).to_dict())


def result(c: RelayCore, sid: str, src: str, role: str = "research", **kw: Any) -> bytes:
    body = {"sub_task_id": sid, "parent_task_id": "run1", "worker_agent_role": role, "status": "COMPLETED",
            "result_data": "1905", "processed_result_data": 1905, **kw}  # fmt: skip
    return c.adapter.encode(make_packet(PacketType.RESULT, body, run_id="run1", src=src, seq=1).to_dict())


def folded(outs: list[Outcome]) -> Totals:
    t = Totals()
    for o in outs:
        for r in o.records:
            t.add(r)
    return t


def test_a_subtask_goes_to_one_worker_of_its_role_and_the_result_to_its_orchestrator() -> None:
    c = core()
    outs = [c.start("The museum opened in 1905.", "q?", 400, 0.0)]
    # Two research replicas: routing shares work, but every research worker reads the document.
    assert c.router.mode is RoutingMode.SHARE and set(outs[0].sends[0].dst) == {"o", "r1", "r2"}
    first = c.receive("o", subtask(c, "s1"), 1.0)
    second = c.receive("o", subtask(c, "s2"), 1.1)
    outs += [first, second]
    (w1,), (w2,) = first.sends[0].dst, second.sends[0].dst
    assert {w1, w2} == {"r1", "r2"}  # shared among the replicas of the role, never broadcast
    back = c.receive(w1, result(c, "s1", w1), 2.0)
    outs.append(back)
    assert back.sends[0].dst == ("o",) and back.records[0].type == "result"
    assert c.end is None  # results do not end the run; the orchestrator's final answer does
    assert folded(outs) == c.totals


def test_a_dead_workers_subtask_is_redelivered_to_a_live_replica() -> None:
    c = core()
    outs = [c.start("doc", "q?", 400, 0.0), c.receive("o", subtask(c, "s1"), 1.0)]
    (worker,) = outs[-1].sends[0].dst
    other = "r2" if worker == "r1" else "r1"
    lost = c.lost(worker, "killed", 2.0)
    outs.append(lost)
    assert lost.sends[0].dst == (other,) and lost.records[0].status == "redelivered"
    assert lost.records[0].src == "network" and c.end is None
    assert parse_packet_json(lost.sends[0].blob).payload.sub_task_id == "s1"  # type: ignore[union-attr]
    assert folded(outs) == c.totals


def test_no_worker_of_the_role_left_fails_the_subtask_back_to_the_orchestrator() -> None:
    c = core([("o", "orchestrator"), ("r1", "research"), ("u", "utility")])
    outs = [c.start("doc", "q?", 400, 0.0), c.receive("o", subtask(c, "s1"), 1.0)]
    lost = c.lost("r1", "killed", 2.0)
    outs.append(lost)
    (failure,) = [r for r in lost.records if r.type == "result"]
    assert failure.src == "network" and failure.dst == ["o"]
    packet = parse_packet_json(lost.sends[0].blob)
    assert packet.payload.status == "FAILED"  # type: ignore[union-attr]
    assert "no other live 'research' agent" in packet.payload.error_details.message  # type: ignore[union-attr]
    assert c.end is None  # the orchestrator revises its plan; the run goes on
    # A sub-task for a role nobody in the run has fails at once, with its own message.
    unknown = c.receive("o", subtask(c, "s2", role="research"), 3.0)
    assert [r.type for r in unknown.records] == ["subtask", "result"] and unknown.records[0].dst == []
    reply = parse_packet_json(unknown.sends[0].blob)
    assert reply.payload.error_details.message == "no live 'research' agent in this run"  # type: ignore[union-attr]
    assert folded([*outs, unknown]) == c.totals


def test_the_orchestrator_dying_ends_the_run_when_no_other_is_left() -> None:
    c = core()
    c.start("doc", "q?", 400, 0.0)
    c.receive("o", subtask(c, "s1"), 1.0)  # handing out work is not finishing its own
    out = c.lost("o", "killed", 2.0)
    assert out.end is not None and out.end.status == "agent_dead" and "orchestrator" in (out.end.error or "")


def test_a_worker_dying_before_any_subtask_does_not_end_the_run() -> None:
    c = core()
    c.start("doc", "q?", 400, 0.0)
    out = c.lost("u", "killed", 1.0)
    assert out.end is None and c.end is None and not out.sends


def test_stray_duplicate_and_forged_queue_frames_are_rejected_and_counted() -> None:
    c = core()
    outs = [c.start("doc", "q?", 400, 0.0), c.receive("o", subtask(c, "s1"), 1.0)]
    (worker,) = outs[-1].sends[0].dst
    other = "r2" if worker == "r1" else "r1"
    cases = [
        (c.receive("o", subtask(c, "s1"), 1.1), "sub-task id 's1' is already used in this run"),
        (c.receive(worker, result(c, "nope", worker), 1.2), "result for unknown sub-task 'nope'"),
        (c.receive(other, result(c, "s1", other), 1.3), f"result for sub-task 's1' from agent '{other}'; it is assigned to '{worker}'"),
    ]  # fmt: skip
    for out, message in cases:
        (record,) = out.records
        assert record.status == "rejected" and record.error == message and not out.sends
    ok = c.receive(worker, result(c, "s1", worker), 1.4)
    again = c.receive(worker, result(c, "s1", worker), 1.5)
    assert ok.sends[0].dst == ("o",)
    assert again.records[0].error == "result for sub-task 's1', which no agent is working on (answered already?)"
    assert c.totals.rejected_cnt == 4 and c.end is None
    assert folded([*outs, *(o for o, _ in cases), ok, again]) == c.totals
