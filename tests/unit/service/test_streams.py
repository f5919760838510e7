"""The service's streams by plain calls: the request's checks, a ``tasks`` name resolved (never a
path), a stream's state read from its folder, and the command a stream runs."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from gaiamesh.errors import Conflict, Invalid, NotFound
from gaiamesh.service import create_app
from gaiamesh.service.models import StreamRecord, StreamRequest, StreamState
from gaiamesh.service.streams import (
    ERROR,
    REPORT,
    REQUEST,
    STOPPED,
    StreamManager,
    _group_alive,
    failure,
    folder_state,
    read_view,
    resolve_tasks,
    stream_argv,
    stream_sets,
)
from gaiamesh.settings import PathSettings, load_settings

ROOT = Path(__file__).resolve().parents[3]
PATHS = PathSettings(tasks_dir=ROOT / "tasks", stream_tasks_dir=ROOT / "tasks-stream")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"workers": -1}, "workers"),
        ({"workers": 65}, "workers"),
        ({"team": "remote"}, "team"),
        ({"limit": -1}, "limit"),
        ({"per_worker": 0}, "per_worker"),
        ({"policy": "random"}, "policy"),
        ({"pace": "fast"}, "pace"),
        ({"transport": "udp"}, "transport"),
        ({"tasks": ""}, "tasks"),
        ({"question": "why?"}, "question"),  # a field no stream has
    ],
)
def test_a_stream_request_refuses_what_it_cannot_run(body: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        StreamRequest.model_validate({"tasks": "protocolbench-top1000", **body})
    assert [e["loc"][0] for e in caught.value.errors()] == [field]


def test_a_stream_request_s_defaults_and_bounds() -> None:
    r = StreamRequest(tasks="protocolbench-top1000")
    assert (r.workers, r.limit, r.policy, r.per_worker, r.replay_of, r.pace) == (
        4,
        0,
        "dynamic",
        1,
        None,
        "recorded",
    )
    assert (
        StreamRequest.model_validate({"tasks": "x", "workers": "64", "limit": "4"}).workers == 64
    )  # the page's JSON


def test_names_resolve_to_the_bundled_stream_set_or_a_task_folder_or_set(tmp_path: Path) -> None:
    assert (
        resolve_tasks("protocolbench-top1000", PATHS) == ROOT / "tasks-stream" / "protocolbench-top1000.jsonl"
    )
    assert resolve_tasks("solar-farm", PATHS) == ROOT / "tasks" / "solar-farm"
    (tmp_path / "sets.jsonl").write_text("{}\n")
    (tmp_path / "notes.txt").write_text("not a set\n")
    paths = PathSettings(tasks_dir=tmp_path, stream_tasks_dir=tmp_path / "none")
    assert resolve_tasks("sets", paths) == tmp_path / "sets.jsonl"
    assert resolve_tasks("sets.jsonl", paths) == tmp_path / "sets.jsonl"
    with pytest.raises(NotFound, match="no stream set or task set named 'notes.txt'"):
        resolve_tasks("notes.txt", paths)  # a file that is no set is not one


@pytest.mark.parametrize(
    "name",
    ["../tasks", "tasks/solar-farm", "/etc/passwd", "a..b", "..", ".hidden", "a\\b", "solar farm", "x" * 101],
)
def test_a_path_in_tasks_is_invalid(name: str) -> None:
    with pytest.raises(Invalid, match=r"'tasks' is a name, not a path: .*protocolbench-top1000"):
        resolve_tasks(name, PATHS)


def test_an_unknown_name_is_not_found_and_says_what_there_is() -> None:
    with pytest.raises(
        NotFound, match=r"no stream set or task set named 'no-such-set'.*protocolbench-top1000"
    ):
        resolve_tasks("no-such-set", PATHS)
    assert stream_sets(PATHS) == ["protocolbench-top1000"]
    assert stream_sets(PathSettings(stream_tasks_dir=ROOT / "no-such-folder")) == []


def _accepted(folder: Path, **request: Any) -> StreamRecord:
    folder.mkdir(parents=True, exist_ok=True)
    record = StreamRecord(
        id=folder.name, created=1000.0, request=StreamRequest(tasks="protocolbench-top1000", **request)
    )
    (folder / REQUEST).write_text(record.model_dump_json())
    return record


def _report(**over: Any) -> dict[str, Any]:
    latency = {"n": 4, "mean": 2.0, "std": 0.5, "p50": 1.9, "p95": 2.8, "p99": 2.8, "max": 2.8}
    summary = {"items": 4, "answered": 4, "failed": 0, "success_rate": 1.0, "retries": 0, "duplicates": 0,
               "lost_sends": 0, "wall_s": 9.5, "items_per_min": 25.3, "latency": latency, "queue_wait": latency,
               "per_worker": {"1": 2, "2": 2}, "worker_variance": 0.0}  # fmt: skip
    return {"tasks": "/x/protocolbench-top1000.jsonl", "items": 4, "workers": 2, "protocol": "json",
            "transport": "relay", "status": "ok", "error": None, "summary": summary, "service": latency,
            "bytes": {"mean": 1500.0, "p50": 1490.0, "p95": 1700.0, "doc_init": 400}, "quality": None,
            "backend": "ollama", "sent": 4, "policy": "dynamic", "per_worker": 1, "replay": None, "pace": None,
            "model": latency, "wire": latency, "decode_us_p50": 30.0, "decode_us_p95": 60.0, "scored": 0,
            "wall_ms": 9500.0, "unaccounted": 0, "told_twice": 0, **over}  # fmt: skip


def test_a_folder_with_only_its_request_was_cut_off(tmp_path: Path) -> None:
    record = _accepted(tmp_path / ("a" * 16), workers=2, limit=4)
    assert folder_state(tmp_path / ("a" * 16)) is StreamState.INTERRUPTED
    view = read_view(tmp_path / ("a" * 16))
    assert (view.state, view.error, view.report, view.ended) == (StreamState.INTERRUPTED, STOPPED, None, None)
    assert view.request == record.request and view.created == 1000.0
    # the stream this process runs: its state is the live one, not the folder's
    assert read_view(tmp_path / ("a" * 16), StreamState.RUNNING).state is StreamState.RUNNING


def test_a_folder_with_an_error_failed_with_its_words(tmp_path: Path) -> None:
    folder = tmp_path / ("b" * 16)
    _accepted(folder)
    (folder / ERROR).write_text("bad task: items.jsonl line 3: not JSON\n")
    view = read_view(folder)
    assert (view.state, view.error) == (StreamState.FAILED, "bad task: items.jsonl line 3: not JSON")
    assert view.ended == (folder / ERROR).stat().st_mtime


def test_a_folder_with_its_report_is_done_and_hands_on_the_whole_report(tmp_path: Path) -> None:
    folder = tmp_path / ("c" * 16)
    _accepted(folder)
    (folder / ERROR).write_text("an older error\n")  # the report wins: the stream ended with it
    (folder / REPORT).write_text(json.dumps(_report(frames=42)))
    view = read_view(folder)
    assert view.state is StreamState.DONE and view.error is None and view.report is not None
    assert (view.report.summary.answered, view.report.summary.per_worker) == (4, {"1": 2, "2": 2})
    assert view.report.bytes is not None and view.report.bytes.mean == 1500.0
    dumped = view.model_dump(mode="json")["report"]
    assert (dumped["frames"], dumped["backend"], dumped["bytes"]["doc_init"]) == (
        42,
        "ollama",
        400,
    )  # kept as written


def test_a_report_the_service_cannot_read_is_an_error_not_a_guess(tmp_path: Path) -> None:
    folder = tmp_path / ("d" * 16)
    _accepted(folder)
    (folder / REPORT).write_text(json.dumps(_report(summary={"items": "four"})))
    with pytest.raises(ValidationError):
        read_view(folder)


def test_the_command_a_stream_runs() -> None:
    request = StreamRequest(
        tasks="protocolbench-top1000", workers=2, limit=4, per_worker=2, policy="round-robin"
    )
    argv = stream_argv(request, Path("/sets/q.jsonl"), Path("/out/s"), "a2a", None)
    assert argv[:4] == [sys.executable, "-m", "gaiamesh", "stream"]
    flags = dict(zip(argv[4::2], argv[5::2], strict=True))
    assert flags == {"--tasks": "/sets/q.jsonl", "--workers": "2", "--protocols": "a2a", "--limit": "4",
                     "--policy": "round-robin", "--per-worker": "2", "--out": "/out/s", "--team": "local"}  # fmt: skip
    deployed = stream_argv(StreamRequest(tasks="x", team="deployed", workers=0), Path("/q"), Path("/o"), "json", None)
    assert "--workers" not in deployed and deployed[deployed.index("--team") + 1] == "deployed"  # every answerer
    replay = StreamRequest(tasks="x", replay_of="e" * 16, pace="none", transport="native")
    tail = stream_argv(replay, Path("/q"), Path("/o"), "json", Path("/streams/eee"))[-6:]
    assert tail == ["--transport", "native", "--replay", "/streams/eee", "--pace", "none"]


def test_a_failed_stream_says_the_command_s_last_words_or_its_exit_code() -> None:
    assert failure(2, "\nbad task: q.jsonl line 1: not JSON\n") == "bad task: q.jsonl line 1: not JSON"
    assert failure(1, "") == "gaiamesh stream exited with code 1 without writing stream.json (see stream.log)"
    assert len(failure(1, "x" * 10_000)) == 4000


# --- through the app (no stream started: the folders are written here) ---------------------------
KEY = "unit-access-key-0123456789"
DONE, FAILED, CUT = "d0" * 8, "f0" * 8, "c0" * 8


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    for n, name in enumerate((DONE, FAILED, CUT)):
        folder = tmp_path / "streams" / name
        _accepted(folder, workers=2, limit=4)
        record = StreamRecord.model_validate_json((folder / REQUEST).read_text())
        (folder / REQUEST).write_text(record.model_copy(update={"created": 1000.0 + n}).model_dump_json())
    (tmp_path / "streams" / DONE / REPORT).write_text(json.dumps(_report()))
    (tmp_path / "streams" / DONE / "items.csv").write_text("item_id,worker,status\nq1,1,answered\n")
    (tmp_path / "streams" / FAILED / ERROR).write_text("bad task: q.jsonl line 2: not JSON\n")
    settings = load_settings(out_dir=tmp_path, access_key=KEY, session_secret="s" * 40, tasks_dir=ROOT / "tasks",
                             stream_tasks_dir=ROOT / "tasks-stream")  # fmt: skip
    with TestClient(create_app(settings), base_url="http://127.0.0.1:8080") as c:
        c.headers["Authorization"] = f"Bearer {KEY}"
        yield c


def test_the_streams_routes_read_each_stream_s_state_from_its_folder(client: TestClient) -> None:
    listed = client.get("/api/streams").json()
    assert [(s["id"], s["state"]) for s in listed] == [
        (CUT, "interrupted"),
        (FAILED, "failed"),
        (DONE, "done"),
    ]
    done = client.get(f"/api/streams/{DONE}").json()
    assert done["report"]["summary"]["answered"] == 4 and done["request"]["workers"] == 2
    assert client.get(f"/api/streams/{FAILED}").json()["error"] == "bad task: q.jsonl line 2: not JSON"
    items = client.get(f"/api/streams/{DONE}/items.csv")
    assert (
        items.status_code == 200
        and items.text.startswith("item_id,")
        and "text/csv" in items.headers["content-type"]
    )
    refused = client.get(f"/api/streams/{FAILED}/items.csv")
    assert refused.status_code == 409 and "failed: it has no items.csv" in refused.json()["detail"]
    for missing in ("0" * 16, "..", "not-an-id"):
        assert client.get(f"/api/streams/{missing}").status_code == 404


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"tasks": "../tasks-stream/protocolbench-top1000.jsonl"}, 422, "'tasks' is a name, not a path"),
        ({"tasks": "no-such-set"}, 404, "no stream set or task set named 'no-such-set'"),
        ({"tasks": "protocolbench-top1000", "workers": 0}, 422, "at least 1 for a local team"),
        ({"tasks": "protocolbench-top1000", "team": "deployed", "replay_of": DONE}, 422,
         "a deployed team answers with the deployment's own model backend"),
        ({"tasks": "protocolbench-top1000", "workers": 65}, 422, "less than or equal to 64"),
        ({"tasks": "protocolbench-top1000", "protocol": "smtp"}, 422, "unknown protocol 'smtp'"),
        (
            {"tasks": "protocolbench-top1000", "replay_of": "0" * 16},
            404,
            "no stream '0000000000000000' to replay",
        ),
        (
            {"tasks": "protocolbench-top1000", "replay_of": FAILED},
            409,
            "is failed: only a stream that is done",
        ),
        (
            {"tasks": "protocolbench-top1000", "replay_of": CUT},
            409,
            "is interrupted: only a stream that is done",
        ),
    ],
)
def test_a_stream_that_cannot_run_is_refused_and_nothing_is_written(
    client: TestClient, tmp_path: Path, body: dict[str, Any], status: int, words: str
) -> None:
    r = client.post("/api/streams", json=body)
    assert r.status_code == status, r.text
    assert words in json.dumps(r.json()["detail"])
    assert sorted(p.name for p in (tmp_path / "streams").iterdir()) == sorted([DONE, FAILED, CUT])


def test_streams_need_the_access_key(client: TestClient) -> None:
    for method, path in [("GET", "/api/streams"), ("GET", f"/api/streams/{DONE}"),
                         ("GET", f"/api/streams/{DONE}/items.csv"), ("POST", "/api/streams")]:  # fmt: skip
        r = client.request(
            method, path, json={"tasks": "protocolbench-top1000"}, headers={"Authorization": ""}
        )
        assert r.status_code == 401, (method, path)
    session = client.post("/api/sessions", json={"document": "A page."}).json()
    r = client.get("/api/streams", headers={"Authorization": f"Bearer {session['token']}"})
    assert r.status_code == 403 and "the access key's" in r.json()["detail"]


def test_the_streams_page_lists_each_stream_and_shows_one(client: TestClient) -> None:
    client.headers.pop("Authorization")
    assert client.get("/streams").status_code == 401  # the login form
    client.get(f"/?key={KEY}")
    page = client.get("/streams")
    assert page.status_code == 200 and 'href="/streams" aria-current="page"' in page.text
    assert '<option value="protocolbench-top1000">' in page.text and 'value="solar-farm"' in page.text
    row = re.search(rf'<tr data-stream="{DONE}".*?</tr>', page.text, re.S)
    assert (
        row is not None
        and "4 / 4" in row[0]
        and "25.3" in row[0]
        and "1.90 / 2.80" in row[0]
        and "1,500" in row[0]
    )
    assert re.search(rf'<tr data-stream="{FAILED}" data-state="failed">', page.text)
    one = client.get(f"/streams/{DONE}")
    assert one.status_code == 200 and f'href="/api/streams/{DONE}/items.csv"' in one.text
    assert "4 answered of 4 (0 empty, 0 failed)" in one.text and "<tr><td>1</td><td>2</td></tr>" in one.text
    assert '<th scope="row">team</th><td>local</td>' in one.text  # which team answered
    assert '<select name="team"><option value="local" selected>local</option><option value="deployed">' in page.text
    assert (
        "hx-trigger" not in one.text.split('id="stream"', 1)[1].split(">", 1)[0]
    )  # a done stream is not polled
    assert "bad task: q.jsonl line 2" in client.get(f"/streams/{FAILED}").text
    assert client.get(f"/streams/{'9' * 16}").status_code == 404
    assert client.get("/ui/streams").status_code == 200


async def test_a_stop_ends_every_process_of_the_stream_s_group(tmp_path: Path) -> None:
    # a command with a child that ignores SIGTERM, as an agent slow to stop would: the group is
    # signalled, and what is left after the grace is killed; nothing of the group remains
    script = "trap '' TERM; sleep 60 & echo $! > child.pid; wait"
    proc = await asyncio.create_subprocess_exec("sh", "-c", script, cwd=tmp_path, start_new_session=True)
    pid_file = tmp_path / "child.pid"
    for _ in range(100):
        if pid_file.is_file() and pid_file.read_text().strip():
            break
        await asyncio.sleep(0.05)  # the shell writes its child's pid when it has started it
    child = int(pid_file.read_text())
    assert _state(child) not in (None, "Z") and _group_alive(proc.pid)
    manager = StreamManager(load_settings(out_dir=tmp_path, access_key=KEY, session_secret="s" * 40))
    await manager._halt(proc, grace=0.5)
    assert proc.returncode is not None
    assert _state(child) in (None, "Z")  # killed: gone, or a zombie no init has reaped yet
    assert not _group_alive(proc.pid)


def _state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


async def test_a_deployed_stream_whose_team_is_not_running_is_refused_at_once(tmp_path: Path) -> None:
    # compose's AGENTS lists the stream's team as optional agents; with the `stream` profile off
    # their names do not resolve, and the stream is refused before it starts, naming the profile
    agents = "0=search@127.0.0.1:9000,11=coordinator@agent-coordinator.invalid:9011?,12=answerer@dns:agent-answerer.invalid:9012?"
    manager = StreamManager(load_settings(out_dir=tmp_path, agents=agents, access_key=KEY, session_secret="s" * 40))
    request = StreamRequest(tasks="protocolbench-top1000", team="deployed")
    with pytest.raises(Conflict, match="compose profile 'stream'"):
        await manager.check_team(request)
    await manager.check_team(StreamRequest(tasks="protocolbench-top1000", team="local"))  # a local team is its own


def test_a_running_stream_s_figures_so_far_come_from_its_coordinator_s_lines(tmp_path: Path) -> None:
    from gaiamesh.evaluation.streams import AttemptLine, FateLine, progress_of
    from gaiamesh.service.streams import items_in, told_so_far

    def line(i: int, status: str, took: float | None, outcome: str = "answered") -> str:
        attempts = [AttemptLine(worker="1", sent_s=0.0, ended_s=took, outcome=outcome)]
        return FateLine(id=str(i), status=status, prediction="x" if status == "answered" else "", answered_by="1",
                        queued_s=0.0, answered_s=took, attempts=attempts).model_dump_json()  # fmt: skip

    log = tmp_path / "workspaces" / "0" / "run-1" / "items.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text("\n".join([line(1, "answered", 2.0), line(2, "empty", 4.0), line(3, "failed", None, "lost"),
                              line(4, "answered", 1.0)]) + '\n{"id": "5", "sta')  # fmt: skip  (a line being written)
    p = progress_of(told_so_far(tmp_path), items_in(ROOT / "tasks-stream" / "protocolbench-top1000.jsonl", 20))
    assert (p.total, p.told, p.answered, p.empty, p.failed, p.lost_sends) == (20, 4, 2, 1, 1, 1)
    assert (p.latency_p50_s, p.latency_max_s) == (2.0, 4.0)  # over the three a worker replied to
    assert items_in(ROOT / "tasks-stream" / "protocolbench-top1000.jsonl", 0) == 1000
    assert items_in(ROOT / "tasks" / "solar-farm", 5) is None  # a task folder: counted as it is read
    assert progress_of([], None).latency_p50_s is None
