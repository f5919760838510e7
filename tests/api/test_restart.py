"""The network service killed mid-run and started again: nothing finished is lost, the run in
flight is ``interrupted`` with its frame log up to the kill, a run still queued is queued again
and runs, the ``gaiamesh submit`` client that waits for it says what happened and follows it to
its end, and new runs work at once. A client whose service does not come back says so and
exits 3."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from websockets.sync.client import connect

from gaiamesh.evaluation.audit import audit
from gaiamesh.evaluation.metrics import read_log
from gaiamesh.tasks import load_task

from ..conftest import ROOT, TASKS, replayed
from .conftest import KEY, Service

pytestmark = [pytest.mark.e2e, pytest.mark.model]


def test_a_killed_service_restarts_with_nothing_lost(
    paced_agents: tuple[str, Path], recorded: Path, tmp_path: Path
) -> None:
    # The restart is the subject, not the model: the agents replay the recorded runs at their
    # recorded pace, so a run is in flight as long as the live model kept it, and no model
    # computes (it took 215 s of the shared model server's time). RUN_TIMEOUT as the compose
    # suite's: the run queued again waits behind the cut run's remaining calls.
    svc = Service(tmp_path / "state", "", paced_agents, RUN_TIMEOUT="600", **replayed(recorded, "recorded"))
    svc.start()
    question = load_task(TASKS / "mountain-observatory").question  # a recorded question, asked in a session
    try:
        done = svc.http.post("/api/runs", json={"task": "solar-farm"}).json()
        svc.events(done["id"])
        session = svc.http.post("/api/sessions", json={"task": "mountain-observatory"}).json()
        as_session = {"Authorization": f"Bearer {session['token']}"}
        in_flight = svc.http.post(  # the session's run is the one cut off
            f"/api/sessions/{session['id']}/messages", json={"question": question},
            headers=as_session,
        ).json()
        queued = _client(svc, "glass-museum", back_within=120)  # gaiamesh submit, waiting in the queue
        accepted = queued.stdout.readline() if queued.stdout else ""
        assert " accepted (glass-museum), queue position 1" in accepted, accepted
        queued_id = accepted.split()[1]
        url = svc.url.replace("http", "ws") + f"/api/runs/{in_flight['id']}/events?token={KEY}"
        with connect(url) as ws:  # kill it once frames of the run have gone through the relay
            while json.loads(ws.recv()).get("type") != "search_docs":
                pass
            svc.stop(kill=True)
        svc.start()
        # the finished run and the session are intact
        before = svc.http.get(f"/api/runs/{done['id']}").json()
        assert before["state"] == "finished" and before["metrics"]["status"] == "ok"
        s = svc.http.get(f"/api/sessions/{session['id']}", headers=as_session)
        assert s.status_code == 200 and s.json()["state"] == "STOP" and s.json()["runs"] == [in_flight["id"]]
        history = svc.http.get(f"/api/sessions/{session['id']}/messages", headers=as_session).json()["messages"]
        assert history[-1]["type"] == "system" and "interrupted" in history[-1]["content"]["text"]
        # the run in flight is interrupted, with its frame log up to the kill, audited
        cut = svc.http.get(f"/api/runs/{in_flight['id']}").json()
        assert cut["state"] == "interrupted" and cut["error"] == "the service stopped while this run was in flight"
        assert cut["metrics"]["status"] == "interrupted"
        run_dir = tmp_path / "state" / "runs" / in_flight["id"]
        log = read_log(run_dir / "frames.jsonl")
        assert [r.type for r in log][:2] == ["doc_init", "search_docs"]
        assert cut["metrics"]["pkt_cnt"] == len(log)
        assert all(reported == recomputed for _, reported, recomputed in audit(run_dir))
        replay = svc.events(in_flight["id"])  # its events replay from the log
        assert [e["type"] for e in replay if e["kind"] == "frame"] == [r.type for r in log]
        assert svc.http.get(f"/api/runs/{in_flight['id']}/artifacts").status_code == 200
        # the run that was waiting is queued again and runs; its client said what happened and followed it
        said, _ = queued.communicate(timeout=300)
        assert queued.returncode == 0, accepted + said
        assert f"the service went away while run {queued_id} was under way" in said, said
        assert f"the service is back: run {queued_id} is " in said, said  # queued, running or finished by then
        notes = [e["text"] for e in svc.events(queued_id) if e["kind"] == "note"]
        assert any("queued again: the service restarted" in n for n in notes), notes
        resumed = svc.http.get(f"/api/runs/{queued_id}").json()
        assert resumed["state"] == "finished" and resumed["metrics"]["status"] == "ok", resumed
        # and the service works at once, the cut-off session too
        fresh = svc.http.post("/api/runs", json={"task": "solar-farm"}).json()
        svc.events(fresh["id"])
        assert svc.http.get(f"/api/runs/{fresh['id']}").json()["metrics"]["status"] == "ok"
        again = svc.http.post(f"/api/sessions/{session['id']}/messages", json={"question": question}, headers=as_session)
        assert again.status_code == 202, again.text
        svc.events(again.json()["id"], session["token"])
        assert svc.http.get(f"/api/runs/{again.json()['id']}").json()["metrics"]["status"] == "ok"
        # a service that does not come back: the client waits as long as it was told, says so, exits 3
        gone = _client(svc, "solar-farm", back_within=2)  # in flight: replayed at the recorded pace
        assert gone.stdout is not None and " accepted (solar-farm)" in gone.stdout.readline()
        svc.stop(kill=True)
        said, _ = gone.communicate(timeout=60)
        assert gone.returncode == 3, said
        assert "went away during run" in said and "did not answer again within 2 s" in said, said
    finally:
        svc.stop()


def _client(svc: Service, task: str, back_within: float) -> subprocess.Popen[str]:
    """``gaiamesh submit`` of the bundled ``task`` to ``svc``, as a user runs it."""
    argv = [sys.executable, "-m", "gaiamesh", "submit", "--task", task, "--url", svc.url,
            "--back-within", str(back_within)]
    env = {**os.environ, "GAIAMESH_ACCESS_KEY": KEY, "COLUMNS": "200"}
    return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
