"""``gaiamesh submit``: start a run on a running network service, follow its frames live, and
return its metrics (an ``httpx`` client and a WebSocket follower)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from pydantic import TypeAdapter
from websockets.exceptions import WebSocketException
from websockets.sync.client import connect

from ..errors import SubmitError
from ..evaluation.metrics import RunMetrics
from .models import FrameEvent, JournalEvent, NoteEvent, RunEvent, RunRequest, RunView, StateEvent, TeamEvent

EVENT: TypeAdapter[RunEvent] = TypeAdapter(RunEvent)



def describe(event: FrameEvent | StateEvent | NoteEvent | TeamEvent | JournalEvent) -> str:
    """One progress line for an event."""
    if isinstance(event, FrameEvent):
        where = f"{event.src} -> {','.join(event.dst) or '-'}"
        extra = f" REJECTED: {event.error}" if event.status == "rejected" else ""
        return (
            f"[{event.t_ms / 1000:7.2f}s] {event.type or '?':<10} {where} "
            f"({event.bytes} B, {event.token_used} tokens){extra}"
        )
    if isinstance(event, StateEvent):
        return f"run {event.state.value}" + (f": {event.error}" if event.error else "")
    if isinstance(event, JournalEvent):
        return f"orchestrator {event.node_id}: {event.entry.get('event', '?')}"
    if isinstance(event, TeamEvent):
        return "agents: " + ", ".join(f"{a.node_id}={a.tool} ({a.state})" for a in event.agents)
    return event.text


def submit(
    url: str, key: str, request: RunRequest, progress: Callable[[str], None] = print
) -> tuple[RunView, RunMetrics | None]:
    """Start ``request`` on the service at ``url``, report each event, return the finished run."""
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=url, headers=headers, timeout=30) as http:
        try:
            r = http.post("/api/runs", json=request.model_dump(exclude_none=True, mode="json"))
        except httpx.HTTPError as exc:
            raise SubmitError(f"network service unreachable at {url}: {exc}") from exc
        if r.status_code != 202:
            raise SubmitError(f"the service refused the run ({r.status_code}): {_detail(r)}")
        run = RunView.model_validate(r.json())
        progress(f"run {run.id} accepted ({run.task_id}), queue position {run.queue_position or 0}")
        ws_url = url.replace("http://", "ws://", 1).replace("https://", "wss://", 1) + f"/api/runs/{run.id}/events"
        metrics: RunMetrics | None = None
        try:
            with connect(ws_url, additional_headers=headers, open_timeout=30) as ws:
                for message in ws:  # until the service closes the stream at the run's end
                    event = EVENT.validate_json(message)
                    if event.kind == "metrics":
                        metrics = event.metrics
                    else:
                        progress(describe(event))
        except (OSError, WebSocketException) as exc:
            raise SubmitError(f"lost the event stream of run {run.id}: {exc}") from exc
        return RunView.model_validate(http.get(f"/api/runs/{run.id}").json()), metrics


def save_artifacts(url: str, key: str, run_id: str, out: Path) -> Path:
    """Download the run's archive into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
        r = http.get(f"/api/runs/{run_id}/artifacts")
        if r.status_code != 200:
            raise SubmitError(f"no archive for run {run_id} ({r.status_code}): {_detail(r)}")
        path = out / "run_artifacts.tar.gz"
        path.write_bytes(r.content)
    return path


def answers(url: str, timeout: float) -> bool:
    """Whether the service at ``url`` answers ``/api/health`` within ``timeout`` seconds (a
    container that is running may not be listening yet)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"{url}/api/health", timeout=3).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        if time.monotonic() >= deadline:
            return False
        time.sleep(1)  # polling: the service gives no signal when it starts answering


def _detail(r: httpx.Response) -> str:
    """The service's reason, in words: its message, or each invalid field and what is wrong."""
    try:
        detail = r.json().get("detail")
    except (json.JSONDecodeError, AttributeError):
        return r.text[:300]
    if isinstance(detail, list) and all(isinstance(d, dict) for d in detail):
        return "; ".join(
            f"{'.'.join(str(p) for p in d.get('loc', []) if p != 'body') or 'request'}: {d.get('msg', '')}"
            for d in detail
        )
    return detail if isinstance(detail, str) else json.dumps(detail)
