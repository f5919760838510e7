"""The network service killed mid-run and started again: nothing finished is lost, the run in
flight is ``interrupted`` with its frame log up to the kill, and new runs work at once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from websockets.sync.client import connect

from gaiamesh.evaluation.audit import audit
from gaiamesh.evaluation.metrics import read_log

from .conftest import KEY, Service

pytestmark = [pytest.mark.e2e, pytest.mark.model]


def test_a_killed_service_restarts_with_nothing_lost(
    model_server: str, agents: tuple[str, Path], tmp_path: Path
) -> None:
    svc = Service(tmp_path / "state", model_server, agents)
    svc.start()
    try:
        done = svc.http.post("/api/runs", json={"task": "solar-farm"}).json()
        svc.events(done["id"])
        session = svc.http.post("/api/sessions", json={"task": "mountain-observatory"}).json()
        as_session = {"Authorization": f"Bearer {session['token']}"}
        in_flight = svc.http.post(  # the session's run is the one cut off
            f"/api/sessions/{session['id']}/messages", json={"question": "Who discovered comet 118P/Kestrel?"},
            headers=as_session,
        ).json()
        queued = svc.http.post("/api/runs", json={"task": "glass-museum"}).json()
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
        # the run that was waiting is interrupted too, and says so
        waiting = svc.http.get(f"/api/runs/{queued['id']}").json()
        assert waiting["state"] == "interrupted" and "queued" in waiting["error"]
        # and the service works at once, the cut-off session too
        fresh = svc.http.post("/api/runs", json={"task": "solar-farm"}).json()
        svc.events(fresh["id"])
        assert svc.http.get(f"/api/runs/{fresh['id']}").json()["metrics"]["status"] == "ok"
        again = svc.http.post(f"/api/sessions/{session['id']}/messages", json={"question": "When?"}, headers=as_session)
        assert again.status_code == 202, again.text
        svc.events(again.json()["id"], session["token"])
    finally:
        svc.stop()
