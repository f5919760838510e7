"""Streams through the real ``gaiamesh serve``: ProtocolBench's first queries live through a
coordinator and two workers with the real model, their items.csv, the same items replayed from
that stream's recorded calls, one stream at a time, the refusals, a stream that fails on its
items, and a stream cut off by the service's stop (every process it started gone)."""

from __future__ import annotations

import csv
import io
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .conftest import Service

pytestmark = [pytest.mark.e2e, pytest.mark.model]
FIRST = {"tasks": "protocolbench-top1000", "limit": 4, "workers": 2}
STREAM_S = 600  # a live stream of four queries on two busy cores, with its team's start-up


def wait_for(what: str, check: Callable[[], Any], timeout: float = STREAM_S) -> Any:
    """``check()``'s first true value, polled until ``timeout`` seconds have passed."""
    deadline = time.monotonic() + timeout
    while not (found := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:.0f} s")
        time.sleep(0.5)  # polling the service's answer: it has no push for a stream's end
    return found


def ended(service: Service, stream_id: str) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        view: dict[str, Any] = service.http.get(f"/api/streams/{stream_id}").json()
        return view if view["state"] not in ("queued", "running") else None

    result: dict[str, Any] = wait_for(f"stream {stream_id} to end", check)
    return result


def items(service: Service, stream_id: str) -> list[dict[str, str]]:
    r = service.http.get(f"/api/streams/{stream_id}/items.csv")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(r.text)))


def predictions(service: Service, stream_id: str) -> dict[str, str]:
    return {row["item_id"]: row["prediction"] for row in items(service, stream_id)}


@pytest.fixture(scope="module")
def first(service: Service) -> Iterator[dict[str, Any]]:
    """The live stream, and what a second POST got while it ran."""
    r = service.http.post("/api/streams", json=FIRST)
    assert r.status_code == 202, r.text
    accepted = r.json()
    second = service.http.post("/api/streams", json=FIRST)  # the first takes tens of seconds
    wrong = service.http.post("/api/streams", json={**FIRST, "team": "deployed", "replay_of": accepted["id"]})
    running = service.http.get(f"/api/streams/{accepted['id']}").json()["state"]

    def told() -> dict[str, Any] | None:  # the figures so far, once the first item is told
        view = service.http.get(f"/api/streams/{accepted['id']}").json()
        return view["progress"] if view["progress"] and view["progress"]["told"] else None

    so_far = wait_for("the first item told while the stream runs", told)
    yield {"accepted": accepted, "second": second, "wrong": wrong, "running": running, "so_far": so_far,
           "view": ended(service, accepted["id"])}  # fmt: skip


def test_a_live_stream_answers_its_items_and_reports(service: Service, first: dict[str, Any]) -> None:
    accepted, view = first["accepted"], first["view"]
    assert (
        accepted["state"] in ("queued", "running") and accepted["request"]["tasks"] == "protocolbench-top1000"
    )
    assert view["state"] == "done", view
    so_far = first["so_far"]  # while it ran: what its coordinator had told, live
    assert so_far["total"] == 4 and 1 <= so_far["told"] <= 4, so_far
    assert so_far["answered"] + so_far["empty"] + so_far["failed"] == so_far["told"]
    assert so_far["latency_p50_s"] is None or so_far["latency_p50_s"] > 0
    assert view["progress"] is None  # done: the report says it all
    report = view["report"]
    assert (report["status"], report["items"], report["workers"], report["protocol"]) == ("ok", 4, 2, "json")
    summary = report["summary"]
    assert (summary["items"], summary["answered"] + summary["empty"], summary["failed"]) == (4, 4, 0)  # each told once
    assert sum(summary["per_worker"].values()) == 4 and set(summary["per_worker"]) == {"1", "2"}
    assert report["backend"] == "ollama" and report["bytes"]["mean"] > 0  # the whole stream.json, as written
    assert view["ended"] >= view["created"] and view["error"] is None
    folder = service.state / "streams" / accepted["id"]
    assert all(
        (folder / f).is_file()
        for f in ("request.json", "stream.json", "metrics.json", "run_artifacts.tar.gz")
    )
    rows = items(service, accepted["id"])
    assert sorted(r["item_id"] for r in rows) == ["1", "2", "3", "4"]  # ProtocolBench's first four
    assert {r["status"] for r in rows} <= {"answered", "empty"} and any(r["prediction"] for r in rows)
    download = service.http.get(f"/api/streams/{accepted['id']}/items.csv")
    assert download.content == (folder / "items.csv").read_bytes()  # the file, byte for byte
    listed = service.http.get("/api/streams").json()
    assert listed[-1]["id"] == accepted["id"] and listed[-1]["state"] == "done"


def test_one_stream_at_a_time(first: dict[str, Any]) -> None:
    assert first["running"] in ("queued", "running")  # the second POST came while the first ran
    second = first["second"]
    assert second.status_code == 429, second.text
    assert f"stream {first['accepted']['id']} is" in second.json()["detail"]
    assert "one stream runs at a time" in second.json()["detail"]
    # a request that could never run is told what is wrong with it, not to wait
    assert first["wrong"].status_code == 422 and "replay_of: a deployed team" in first["wrong"].json()["detail"]


def test_a_replay_of_the_stream_answers_the_same_items(service: Service, first: dict[str, Any]) -> None:
    source = first["accepted"]["id"]
    r = service.http.post("/api/streams", json={**FIRST, "replay_of": source, "pace": "none"})
    assert r.status_code == 202, r.text
    view = ended(service, r.json()["id"])
    assert view["state"] == "done", view
    report = view["report"]
    assert (report["backend"], report["pace"], report["summary"]["answered"] + report["summary"]["empty"]) == ("replay", "none", 4)
    assert predictions(service, view["id"]) == predictions(service, source)
    newest = service.http.get("/api/streams").json()
    assert [s["id"] for s in newest[:2]] == [view["id"], source]  # newest first


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"tasks": "../tasks-stream/protocolbench-top1000.jsonl"}, 422, "'tasks' is a name, not a path"),
        ({"tasks": "/etc"}, 422, "'tasks' is a name, not a path"),
        ({"tasks": "no-such-set"}, 404, "no stream set or task set named 'no-such-set'"),
        ({"tasks": "protocolbench-top1000", "workers": 0}, 422, "workers"),
        ({"tasks": "protocolbench-top1000", "workers": 65}, 422, "workers"),
        (
            {"tasks": "protocolbench-top1000", "replay_of": "0123456789abcdef"},
            404,
            "no stream '0123456789abcdef' to replay",
        ),
        # STREAM_MEMORY_MIB=1000: 330 MiB and 30 per forked worker, within 85 % of it
        ({"tasks": "protocolbench-top1000", "workers": 32}, 507, "needs about 1290 MiB"),
        ({"tasks": "protocolbench-top1000", "workers": 32}, 507, "at most 17 workers fit"),
        # a deployed team where AGENTS names none: at once, not when the stream starts
        ({"tasks": "protocolbench-top1000", "team": "deployed"}, 409, "no agents of a stream's team in AGENTS"),
    ],
)
def test_bad_input_is_refused_with_what_was_wrong(
    service: Service, body: dict[str, Any], status: int, words: str
) -> None:
    before = set(os.listdir(service.state / "streams")) if (service.state / "streams").is_dir() else set()
    r = service.http.post("/api/streams", json=body)
    assert r.status_code == status, r.text
    assert words in str(r.json()["detail"])
    after = set(os.listdir(service.state / "streams")) if (service.state / "streams").is_dir() else set()
    assert after == before  # nothing accepted, nothing written


def test_every_stream_route_needs_the_token(service: Service, first: dict[str, Any]) -> None:
    sid = first["accepted"]["id"]
    for method, path in [("POST", "/api/streams"), ("GET", "/api/streams"), ("GET", f"/api/streams/{sid}"),
                         ("GET", f"/api/streams/{sid}/items.csv")]:  # fmt: skip
        r = httpx.request(method, f"{service.url}{path}", json=FIRST, timeout=30)
        assert r.status_code == 401, (method, path, r.text)
        assert r.headers.get("www-authenticate", "").lower().startswith("bearer")


def test_a_stream_that_fails_on_its_items_says_why_and_the_next_one_runs(
    model_server: str, agents: tuple[str, Path], tmp_path: Path
) -> None:
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "twice.jsonl").write_text('{"id": "q1", "q": "what is a tide?"}\n{"id": "q1", "q": "again?"}\n')
    (tasks / "empty.jsonl").write_text("\n")
    svc = Service(tmp_path / "state", model_server, agents, TASKS_DIR=str(tasks))
    svc.start()
    try:
        bad = svc.http.post("/api/streams", json={"tasks": "twice", "workers": 1})
        assert bad.status_code == 202, bad.text
        view = ended(svc, bad.json()["id"])
        assert view["state"] == "failed" and view["report"] is None
        assert "bad task" in view["error"] and "id 'q1' is given twice" in view["error"], view["error"]
        assert (tmp_path / "state" / "streams" / view["id"] / "error.txt").is_file()
        # the manager is free again: the next stream is accepted and ends with its own reason
        again = svc.http.post("/api/streams", json={"tasks": "empty", "workers": 1})
        assert again.status_code == 202, again.text
        assert "no items" in ended(svc, again.json()["id"])["error"]
        assert [s["state"] for s in svc.http.get("/api/streams").json()] == ["failed", "failed"]
    finally:
        svc.stop()


def _holders(folder: Path) -> list[int]:
    """The processes whose command line or environment names ``folder`` (a stream's processes:
    the command has it as ``--out``, its relay and agents in their settings)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            text = Path(f"/proc/{pid}/cmdline").read_bytes() + Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:  # gone, or not ours to read
            continue
        if str(folder).encode() in text:
            found.append(int(pid))
    return found


def test_a_stream_cut_off_by_a_stop_is_interrupted_and_leaves_no_process(
    model_server: str, agents: tuple[str, Path], tmp_path: Path
) -> None:
    svc = Service(tmp_path / "state", model_server, agents)
    svc.start()
    try:
        # more items than the module's other streams asked (the memo answers those at once, and
        # four of them could all be answered before the stop): the stop always cuts this one off
        r = svc.http.post("/api/streams", json={**FIRST, "limit": 40, "workers": 1})
        assert r.status_code == 202, r.text
        folder = (tmp_path / "state" / "streams" / r.json()["id"]).resolve()
        # stop it once its team runs: the relay's frame log has begun
        wait_for("the stream's relay to log a frame", lambda: (folder / "frames.jsonl").is_file(), 300)
        assert _holders(folder), "the stream's processes should be running"
        svc.stop()
        wait_for("every process of the stream to end", lambda: not _holders(folder), 30)
        svc.start()
        view = svc.http.get(f"/api/streams/{r.json()['id']}").json()
        assert (
            view["state"] == "interrupted"
            and view["error"] == "the service stopped while this stream was running"
        )
        assert not (folder / "stream.json").exists() and not (folder / "error.txt").exists()
        # and the service takes a stream again at once
        assert svc.http.post("/api/streams", json={"tasks": "no-such-set"}).status_code == 404
    finally:
        svc.stop()
