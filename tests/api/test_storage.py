"""The service's results folder full (a real tmpfs filled to the last byte) or unwritable: each
run gets a clear error, the service stays up, and runs work again once there is room."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gaiamesh.evaluation.audit import audit

from ..conftest import fill_disk, replayed, small_disk
from .conftest import Service

pytestmark = [pytest.mark.e2e, pytest.mark.model]  # model: the recording it replays is live


def run_to_end(svc: Service) -> tuple[int, dict]:
    """POST a run; when accepted, follow it to its end. Returns (POST status, the run or the refusal)."""
    r = svc.http.post("/api/runs", json={"task": "solar-farm"})
    if r.status_code != 202:
        return r.status_code, r.json()
    svc.events(r.json()["id"])
    return 202, svc.http.get(f"/api/runs/{r.json()['id']}").json()


def test_full_or_unwritable_results_get_a_clear_error_and_the_service_stays_up(
    recorded: Path, replayed_agents: tuple[str, Path], tmp_path: Path
) -> None:
    env = replayed(recorded)  # the model's answers replayed: what is tested is the service's storage
    with small_disk(tmp_path / "disk", "32m") as disk:
        svc = Service(disk, env["OLLAMA_HOST"], replayed_agents, **env)  # OUT_DIR (SQLite, runs/) on the small disk
        svc.start()
        try:
            # a full disk: refused before the run starts, saying how much room there is
            filler = fill_disk(disk)
            code, body = run_to_end(svc)
            assert code == 507, body
            assert body["detail"].startswith(f"the results folder {disk} has 0 bytes free; a run needs MIN_FREE_BYTES=")
            assert svc.http.get("/api/health").json()["status"] == "ok"
            assert svc.http.get("/api/runs").status_code == 200
            # room again: the next run works, and its numbers agree with its frame log
            filler.unlink()
            code, body = run_to_end(svc)
            assert code == 202 and body["metrics"]["status"] == "ok", body
            assert all(a == b for _, a, b in audit(disk / "runs" / body["id"]))
            # an unwritable results folder (runs/ is a file): the run says where and why
            shutil.move(disk / "runs", tmp_path / "runs-aside")
            (disk / "runs").write_text("not a folder")
            code, body = run_to_end(svc)
            assert code == 202 and body["state"] == "finished" and body["metrics"] is None, body
            assert body["error"].startswith("cannot write the run's results in ") and "Not a directory" in body["error"]
            (disk / "runs").unlink()
            code, body = run_to_end(svc)
            assert code == 202 and body["metrics"]["status"] == "ok", body
        finally:
            svc.stop()
