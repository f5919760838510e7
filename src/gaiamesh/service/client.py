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

from ..errors import RunRefused, ServiceGone, SubmitError
from ..evaluation.metrics import RunMetrics
from .models import (
    FrameEvent,
    JournalEvent,
    NoteEvent,
    RunEvent,
    RunRequest,
    RunState,
    RunView,
    StateEvent,
    TeamEvent,
)

EVENT: TypeAdapter[RunEvent] = TypeAdapter(RunEvent)
BACK_WITHIN_S = 120.0  # how long a client waits for a service that went away (a restart policy's time)
FINAL = (RunState.FINISHED, RunState.CANCELLED, RunState.INTERRUPTED)


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
    url: str,
    key: str,
    request: RunRequest,
    progress: Callable[[str], None] = print,
    back_within: float = BACK_WITHIN_S,
) -> tuple[RunView, RunMetrics | None]:
    """Start ``request`` on the service at ``url``, report each event, return the finished run.
    When the service goes away meanwhile (killed, restarted), wait up to ``back_within`` seconds
    for it to answer again and report what became of the run; raises :class:`ServiceGone` when it
    does not come back."""
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=url, headers=headers, timeout=30) as http:
        try:
            r = http.post("/api/runs", json=request.model_dump(exclude_none=True, mode="json"))
        except httpx.HTTPError as exc:
            raise SubmitError(f"network service unreachable at {url}: {exc}") from exc
        if r.status_code != 202:
            raise RunRefused(f"the service refused the run ({r.status_code}): {_detail(r)}", r.status_code)
        run = RunView.model_validate(r.json())
        progress(f"run {run.id} accepted ({run.task_id}), queue position {run.queue_position or 0}")
        metrics = _follow(http, url, headers, run.id, progress, back_within)
        view = _view(http, run.id)
        return view, metrics or view.metrics


def _follow(http: httpx.Client, url: str, headers: dict[str, str], run_id: str, progress: Callable[[str], None],
            back_within: float) -> RunMetrics | None:  # fmt: skip
    """Print the run's events until the service closes their stream at the run's end; across a
    restart of the service, its events again when it queued the run again."""
    ws_url = (
        url.replace("http://", "ws://", 1).replace("https://", "wss://", 1) + f"/api/runs/{run_id}/events"
    )
    metrics: RunMetrics | None = None
    while True:
        try:
            with connect(ws_url, additional_headers=headers, open_timeout=30) as ws:
                for message in ws:  # until the service closes the stream at the run's end
                    event = EVENT.validate_json(message)
                    if event.kind == "metrics":
                        metrics = event.metrics
                    else:
                        progress(describe(event))
            return metrics
        except (OSError, WebSocketException) as exc:
            progress(f"the service went away while run {run_id} was under way ({exc or type(exc).__name__}); "
                     f"waiting up to {back_within:.0f} s for it to come back")  # fmt: skip
        if not answers(url, back_within):
            raise ServiceGone(f"the service at {url} went away during run {run_id} and did not answer again within "
                              f"{back_within:.0f} s: what became of the run is GET /api/runs/{run_id} once it is back")  # fmt: skip
        view = _view(http, run_id)
        progress(
            f"the service is back: run {run_id} is {view.state.value}"
            + (f": {view.error}" if view.error else "")
        )
        if view.state in FINAL:
            return view.metrics


def _view(http: httpx.Client, run_id: str) -> RunView:
    try:
        r = http.get(f"/api/runs/{run_id}")
    except httpx.HTTPError as exc:
        raise ServiceGone(f"the service did not answer for run {run_id}: {exc}") from exc
    if r.status_code != 200:
        raise SubmitError(f"the service has no run {run_id} ({r.status_code}): {_detail(r)}")
    return RunView.model_validate(r.json())


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
