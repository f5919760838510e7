"""The fail-storm on the compose stack (``make bench-failstorm``): the eight agent containers of
the ``wide`` profile are killed with SIGKILL and come back by their restart policy; the
runs go through the network service's API, and the relay's view (every frame, every agent lost
or back) comes from each run's live event stream. The measurements are
:func:`gaiamesh.bench.storms.failstorm.analyse`'s, the audits read the results folder the service writes."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
from websockets.asyncio.client import connect

from ...errors import RunError
from ...evaluation.metrics import RunMetrics
from ...mesh.records import FrameRecord
from ...tasks import Task
from .failstorm import RunOne, RunTrace, Storm, failstorm
from .report import write_results

# The wide profile's agents: node id -> compose service (compose.yaml).
SERVICES = {"0": "agent-search", "1": "agent-extract", "2": "agent-triple", "3": "agent-reason",
            "4": "agent-search-2", "5": "agent-extract-2", "6": "agent-triple-2", "7": "agent-reason-2"}  # fmt: skip
TOOLS = {"0": "search", "1": "extract", "2": "triple", "3": "reason", "4": "search", "5": "extract",
         "6": "triple", "7": "reason"}  # fmt: skip


def _docker(*args: str) -> str:
    proc = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise RunError(f"docker {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout


class ComposeTeam:
    """The agent containers of compose project ``project``; killed ones come back by their
    restart policy (``restart: unless-stopped``), which this watches through ``docker events``.

    A kill is SIGKILL to the container's main process, sent from the host: the container dies as
    in a crash, so the restart policy brings it back (``docker kill`` counts as a deliberate stop,
    which the policy leaves down). Where the host cannot signal that process (a Docker engine in
    a VM), it falls back to ``docker kill`` and starts the container again itself."""

    def __init__(self, project: str) -> None:
        self.containers: dict[str, str] = {}
        self._killed_at: dict[str, float] = {}  # wall-clock time of each node's last kill
        self._fallback: set[str] = set()  # killed with `docker kill`: started again by us
        for node, service in SERVICES.items():
            found = _docker("ps", "-q", "--filter", f"label=com.docker.compose.project={project}",
                            "--filter", f"label=com.docker.compose.service={service}").split()  # fmt: skip
            if len(found) != 1:
                raise RunError(f"compose project {project!r} has no running {service} (start it with --profile wide)")
            self.containers[node] = found[0]

    def alive(self) -> list[str]:
        states = json.loads(_docker("inspect", *self.containers.values()))
        running = {c["Id"][:12] for c in states if c["State"]["Running"] and not c["State"]["Restarting"]}
        return [n for n, cid in self.containers.items() if cid[:12] in running]

    def kill(self, node: str) -> None:
        self._killed_at[node] = time.time()
        pid = int(_docker("inspect", "-f", "{{.State.Pid}}", self.containers[node]).strip() or 0)
        try:
            if pid <= 0:
                raise ProcessLookupError(f"{SERVICES[node]} is not running")
            os.kill(pid, signal.SIGKILL)
            self._fallback.discard(node)
        except (PermissionError, ProcessLookupError):
            _docker("kill", self.containers[node])
            self._fallback.add(node)

    async def back(self, node: str) -> float:
        # `docker events` says when the restart policy has started the container again.
        if node in self._fallback:
            await asyncio.to_thread(_docker, "start", self.containers[node])
        proc = await asyncio.create_subprocess_exec(
            "docker", "events", "--format", "{{.TimeNano}}", "--since", f"{time.time() - 5:.3f}",
            "--filter", f"container={self.containers[node]}", "--filter", "event=start",
            stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert proc.stdout is not None
        try:
            while True:
                line = await proc.stdout.readline()
                if not line:
                    raise RunError(f"docker events ended before {SERVICES[node]} started again")
                started = int(line) / 1e9
                if started >= self._killed_at.get(node, 0.0):
                    return time.monotonic() - (time.time() - started)
        finally:
            proc.kill()
            await proc.wait()


def api_runner(url: str, key: str, results: Path, rejoin_grace: float) -> RunOne:
    """Each run through the network service's API; the trace is built from its live events."""
    auth = {"Authorization": f"Bearer {key}"}

    async def run_one(task: Task, trace: RunTrace, clock0: float) -> None:
        async with httpx.AsyncClient(base_url=url, headers=auth, timeout=60) as http:
            r = await http.post("/api/runs", json={"task": task.path.name, "rejoin_grace": rejoin_grace})
            if r.status_code != 202:
                raise RunError(f"the service refused the run of {task.task_id}: {r.status_code} {r.text}")
            run_id = r.json()["id"]
            trace.out = results / "runs" / run_id
            events = url.replace("http", "ws", 1) + f"/api/runs/{run_id}/events?token={key}"
            async with connect(events, open_timeout=30) as ws:
                async for message in ws:
                    _note(trace, json.loads(message), time.monotonic() - clock0)
            view = (await http.get(f"/api/runs/{run_id}")).json()
            trace.metrics = RunMetrics.model_validate(view["metrics"]) if view["metrics"] else None

    return run_one


def _note(trace: RunTrace, event: dict[str, Any], now: float) -> None:
    if event["kind"] == "team":
        trace.teams.append((now, {a["node_id"]: a["state"] for a in event["agents"]}))
    elif event["kind"] == "frame":
        record = FrameRecord(
            n=event["seq"], t_ms=event["t_ms"], src=event["src"], dst=event["dst"], size=event["bytes"],
            rx_bytes=0, tx_bytes=0, header_size=event["header_bytes"], status=event["status"], b64="",
            type=event["type"], tag=event["tag"], token_used=event["token_used"], error=event["error"],
        )  # fmt: skip
        trace.frames.append((now, record))


def run_compose_failstorm(
    project: str, url: str, key: str, results: Path, tasks: list[Task], out: Path, storm: Storm
) -> dict[str, Any]:  # fmt: skip
    """The storm on a running compose stack (``--profile wide``); writes the same results as
    the local storm (``failstorm.json``, ``.md``, ``.png``)."""
    team = ComposeTeam(project)
    config = {"mode": "compose", "project": project, "agents": ",".join(f"{n}={t}" for n, t in TOOLS.items()),
              "routing": "auto (share: two agents per tool)", "down_s": "restart policy",
              "started": datetime.now().isoformat(timespec="seconds")}  # fmt: skip
    result = asyncio.run(
        failstorm(api_runner(url, key, results, storm.grace), team, TOOLS, tasks, out, storm, config)
    )
    write_results(result, out)
    return result
