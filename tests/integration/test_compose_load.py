"""The network container killed under load on the compose stack (issue 60's scene): runs
queued by host clients and a stream when it goes, every accepted run ending with a
status the API shows, and a 16-worker stream whole at the default limits."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

from ..conftest import ROOT
from .conftest import KEY, Stack

pytestmark = pytest.mark.integration


def api(stack: Stack) -> httpx.Client:
    return httpx.Client(base_url=stack.api, headers={"Authorization": f"Bearer {KEY}"}, timeout=60)


def _seed_stream(stack: Stack, recorded: Path) -> str:
    """The suite's live stream (ProtocolBench's first queries, recorded on this host) as a done
    stream of the stack's service, so that a stream may replay it (``replay_of``)."""
    from gaiamesh.service.models import StreamRecord, StreamRequest

    stream_id = uuid.uuid4().hex[:16]
    folder = stack.results / "streams" / stream_id
    shutil.copytree(recorded / "stream", folder)
    request = StreamRequest(tasks="protocolbench-top1000", limit=6, workers=2)
    (folder / "request.json").write_text(StreamRecord(id=stream_id, created=time.time(), request=request).model_dump_json())
    subprocess.run([ROOT / "scripts" / "owner.sh", stack.results / "streams"], check=True)
    return stream_id


def _host_client(stack: Stack) -> subprocess.Popen[str]:
    """`gaiamesh submit` on the host, as a user's script runs it against the stack's API."""
    argv = [sys.executable, "-m", "gaiamesh", "submit", "--task", "solar-farm", "--url", stack.api, "--back-within", "240"]
    env = {**stack.env, "GAIAMESH_ACCESS_KEY": KEY, "COLUMNS": "200", "GAIAMESH_ENV_FILE": ""}
    return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _started(admin: httpx.Client, stream_id: str, timeout: float = 60) -> str:
    """The stream's state once it is no longer queued."""
    deadline = time.monotonic() + timeout
    while (state := admin.get(f"/api/streams/{stream_id}").json()["state"]) == "queued":
        assert time.monotonic() < deadline, state
        time.sleep(0.1)  # polling the API: a stream's start has no push
    return state


def _stream_ends(admin: httpx.Client, stream_id: str, timeout: float = 600) -> dict:
    deadline = time.monotonic() + timeout
    while (view := admin.get(f"/api/streams/{stream_id}").json())["state"] in ("queued", "running"):
        assert time.monotonic() < deadline, view
        time.sleep(1)  # polling the API: a stream's end has no push
    return view


def test_a_killed_network_container_loses_no_accepted_run_and_a_16_worker_stream_fits(stack: Stack, recorded: Path) -> None:
    """Issue 60's scene: a replayed stream and ten queued runs from host clients when the
    network container is killed. Every accepted run ends with a final status the API shows
    (the one in flight interrupted, the queued ones queued again and run), each client says what
    happened; then a 16-worker stream runs whole at the default limits, and nothing was killed
    for memory."""
    admin = api(stack)
    source = _seed_stream(stack, recorded)
    body = {"tasks": "protocolbench-top1000", "limit": 6, "workers": 16, "replay_of": source, "pace": "recorded"}
    clients = [_host_client(stack) for _ in range(10)]
    runs = []
    for client in clients:  # each says its run id first
        line = client.stdout.readline() if client.stdout else ""
        assert " accepted (solar-farm)" in line, line
        runs.append(line.split()[1])
    # The stream goes last and the kill comes as soon as it runs, while its team starts: its six
    # items at their recorded pace took less than the ten clients' start-up (it ended done).
    r = admin.post("/api/streams", json=body)
    assert r.status_code == 202, r.text
    cut = r.json()["id"]
    assert _started(admin, cut) == "running"
    queued_at_kill = sum(admin.get(f"/api/runs/{run}").json()["state"] == "queued" for run in runs)
    assert stack.compose("kill", "network", timeout=60).returncode == 0
    up = stack.compose("up", "-d", "--wait", "network", timeout=240)
    assert up.returncode == 0, up.stderr
    said = [c.communicate(timeout=600)[0] for c in clients]
    admin = api(stack)
    views = [admin.get(f"/api/runs/{run}").json() for run in runs]
    assert all(v["state"] in ("finished", "interrupted") for v in views), [(v["id"], v["state"]) for v in views]
    assert queued_at_kill >= 1 and sum(v["state"] == "finished" for v in views) >= queued_at_kill
    for client, out, view in zip(clients, said, views, strict=True):
        assert client.returncode == (0 if view["state"] == "finished" else 1), out
        if "went away" in out:  # it had not ended before the kill: it says what became of it
            assert f"the service is back: run {view['id']} is " in out, out
        if view["state"] == "interrupted":
            assert f"run {view['id']} ended interrupted" in out, out
    assert admin.get(f"/api/streams/{cut}").json()["state"] == "interrupted"
    # a 16-worker stream whole, at the default limits (NETWORK_MEMORY 3G)
    r = admin.post("/api/streams", json=body)
    assert r.status_code == 202, r.text
    done = _stream_ends(admin, r.json()["id"])
    assert done["state"] == "done" and done["report"]["summary"]["answered"] + done["report"]["summary"]["empty"] == 6, done
    # its team's memory was sampled: sixteen forked workers beside the command and the relay
    # (535 MiB on the host, docs/stream.md)
    assert done["report"]["memory_peak_mib"] > 16 * 16, done["report"]["memory_peak_mib"]
    inspect = subprocess.run(["docker", "inspect", "--format", "{{.State.OOMKilled}}",
                              *stack.compose("ps", "-aq").stdout.split()], capture_output=True, text=True)  # fmt: skip
    assert inspect.returncode == 0 and set(inspect.stdout.split()) == {"false"}, inspect.stdout
