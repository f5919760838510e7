"""Issue 36 on a real swarm of three engines: a run across nodes, a service scaled while it
serves, a worker node lost in the middle of a batch, and everything removed afterwards."""

from __future__ import annotations

import asyncio
import csv
import json
import tarfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from gaiamesh.evaluation.audit import audit
from gaiamesh.tasks import load_task
from gaiamesh.tasks.answers import normalize

from ..conftest import RECORDED_STREAM, TASKS, recorded_metrics
from ..standard_clients import bearer, mcp_session, mcp_text, run_id_in
from .conftest import Swarm

pytestmark = pytest.mark.swarm

SAME = ("prediction", "bytes_tx", "bytes_rx", "pkt_cnt", "header_overhead", "token_sum")
SCALE_WAIT_S = 180.0
STREAM_WAIT_S = 300.0
POLL_S = 1.0  # between looks at swarm's replica count: swarm gives the CLI no event for it


def agreed(folder: Path) -> None:
    rows = audit(folder)
    assert rows and all(reported == recomputed for _, reported, recomputed in rows), rows


def senders(folder: Path, tool: str, metrics: dict[str, Any]) -> set[str]:
    """The agents of ``tool`` that sent a frame in the run."""
    return {n for n, a in metrics["agents"].items() if a["tool"] == tool and a["pkts_sent"] > 0}


def test_a_run_across_nodes_gives_the_bytes_of_the_same_run_locally(recorded: Path, swarm: Swarm) -> None:
    # (the compose suite holds a run on the compose stack to the same local run)
    metrics, folder = swarm.run("solar-farm")
    assert metrics["status"] == "ok", metrics.get("error")
    local = recorded_metrics(recorded, "solar-farm")
    assert {k: str(metrics[k]) for k in SAME} == {k: str(local[k]) for k in SAME}
    agreed(folder)
    # the agents ran on the workers, the relay on the manager: every frame crossed nodes
    placed = swarm.docker("service", "ps", "gaiamesh_agent-search", "--filter", "desired-state=running",
                          "--format", "{{.Node}}")  # fmt: skip
    assert placed.split() and swarm.spec.node(1) not in placed.split()
    # and the relay fetched every agent's workspace from its node: the archive is compose's
    assert metrics["workspaces_missing"] == {} and metrics["encode_us_p50"] is not None
    with tarfile.open(folder / "run_artifacts.tar.gz") as tar:
        names = set(tar.getnames())
    assert len(metrics["agents"]) == 4
    for node in metrics["agents"]:  # a replica's id: its entry's and its address (0.10-0-1-5)
        assert {f"workspaces/{node}/agent.log", f"workspaces/{node}/memory.json"} <= names, names


def test_an_mcp_host_asks_the_swarm_about_a_document(recorded: Path, swarm: Swarm) -> None:
    # the official mcp client against the deployed service's /mcp/, as against `make up`'s stack
    # (tests/integration/test_compose_open.py has all three clients): the task's own text, so
    # the agents' model calls are those the recording holds
    task = load_task(TASKS / "solar-farm")
    calls = [("ask", {"document": task.doc, "question": task.question})]
    _, (answered,), _ = asyncio.run(mcp_session(f"{swarm.api}/mcp/", swarm.key, calls))
    reply = mcp_text(answered)
    assert not answered.is_error, reply
    recorded_answer = recorded_metrics(recorded, "solar-farm")["prediction"]
    assert normalize(reply.splitlines()[0]) == normalize(recorded_answer), reply
    view = httpx.get(f"{swarm.api}/api/runs/{run_id_in(reply)}", headers=bearer(swarm.key), timeout=30).json()
    assert view["state"] == "finished" and view["metrics"]["status"] == "ok" and view["task_id"] == "document"


def test_a_replica_added_by_docker_service_scale_receives_work(swarm: Swarm) -> None:
    swarm.docker("service", "scale", "-d", "gaiamesh_agent-search=2")
    deadline = time.monotonic() + SCALE_WAIT_S
    while swarm.running("agent-search") < 2:
        assert time.monotonic() < deadline, "the second search replica did not start"
        time.sleep(POLL_S)  # polling swarm's count (see POLL_S)
    seen: set[str] = set()
    for _ in range(2):  # the service starts each run's turns one replica further on
        metrics, folder = swarm.run("solar-farm")
        assert metrics["status"] == "ok", metrics.get("error")
        assert [a["status"] for a in metrics["agents"].values() if a["tool"] == "search"] == ["connected"] * 2
        assert metrics["routing"] == "share"
        agreed(folder)
        seen |= senders(folder, "search", metrics)
    assert len(seen) == 2, seen


def test_a_stream_runs_through_answerer_replicas_on_two_engines_as_it_ran_on_one(swarm: Swarm, recorded: Path) -> None:
    # The stack's stream team: one coordinator and two answerer replicas (swarm spreads them over
    # the two agent nodes), given the stream through the API; beside it, the same items live on
    # this machine's one engine (the recorded stream the replicas replay).
    r = httpx.post(f"{swarm.api}/api/streams", headers={"Authorization": f"Bearer {swarm.key}"}, timeout=30,
                   json={"tasks": "protocolbench-top1000", "limit": RECORDED_STREAM, "team": "deployed", "workers": 0})  # fmt: skip
    assert r.status_code == 202, r.text
    stream_id = r.json()["id"]
    deadline = time.monotonic() + STREAM_WAIT_S
    while (view := httpx.get(f"{swarm.api}/api/streams/{stream_id}", timeout=30,
                             headers={"Authorization": f"Bearer {swarm.key}"}).json())["state"] in ("queued", "running"):  # fmt: skip
        assert time.monotonic() < deadline, view
        time.sleep(POLL_S)  # polling the API: it has no push for a stream's end
    assert view["state"] == "done", (view.get("error"), view)
    report, folder = view["report"], swarm.results / "streams" / stream_id
    assert report["team"] == "deployed" and report["unaccounted"] == 0 and report["told_twice"] == 0
    workers = report["worker_ids"]  # the replicas' ids: the entry's and each one's address
    assert len(workers) == 2 and all(w.startswith("12.") for w in workers), workers
    assert set(report["summary"]["per_worker"]) == set(workers) and min(report["summary"]["per_worker"].values()) > 0
    placed = swarm.docker("service", "ps", "gaiamesh_agent-answerer", "--filter", "desired-state=running",
                          "--format", "{{.Node}}").split()  # fmt: skip
    assert len(set(placed)) == 2 and swarm.spec.node(1) not in placed, placed
    here = {row["item_id"]: row for row in csv.DictReader((recorded / "stream" / "items.csv").open())}
    there = {row["item_id"]: row for row in csv.DictReader((folder / "items.csv").open())}
    assert {i: r["prediction"] for i, r in there.items()} == {i: r["prediction"] for i, r in here.items()}
    assert all(r["status"] in ("answered", "empty") for r in there.values())
    agreed(folder)
    print(f"stream across engines: {len(there)} items over {workers}; service p50 "
          f"{report['service']['p50']:.2f} s (one engine: {json.loads((recorded / 'stream' / 'stream.json').read_text())['service']['p50']:.2f} s)")


def test_a_worker_lost_mid_batch_is_rescheduled_and_the_batch_finishes(swarm: Swarm) -> None:
    started = threading.Event()
    outcomes: list[tuple[dict[str, Any], Path]] = []

    def batch() -> None:
        for i in range(3):
            outcomes.append(swarm.run("solar-farm", progress=lambda line, i=i: i == 0 and "doc_init" in line
                                      and started.set()))  # fmt: skip

    worker = threading.Thread(target=batch)
    worker.start()
    assert started.wait(120), "the batch's first run did not start"
    lost_at = time.monotonic()
    swarm.stop_node(3)
    while swarm.docker("node", "inspect", "--format", "{{.Status.State}}", swarm.spec.node(3)).strip() != "down":
        assert time.monotonic() - lost_at < 120, "swarm did not see node 3 go"
        time.sleep(POLL_S)  # polling the node's state (see POLL_S)
    seen_down_s = time.monotonic() - lost_at
    while not swarm.services_whole(lost=3):  # swarm reschedules node 3's tasks on node 2
        assert time.monotonic() - lost_at < 300, "swarm did not reschedule the lost node's tasks"
        time.sleep(POLL_S)  # polling swarm's count (see POLL_S)
    rescheduled_s = time.monotonic() - lost_at
    worker.join(900)
    assert not worker.is_alive() and len(outcomes) == 3
    statuses = [m["status"] for m, _ in outcomes]
    assert set(statuses) <= {"ok", "agent_dead", "timeout"}, statuses
    assert statuses[-1] == "ok", statuses
    for _, folder in outcomes:
        agreed(folder)  # no frame lost or miscounted, whatever the run's end
    print(f"node loss: statuses {statuses}; swarm: node down after {seen_down_s:.1f} s, "
          f"every service whole again after {rescheduled_s:.1f} s; "
          f"{swarm.recovery(outcomes, lost_at)}")
