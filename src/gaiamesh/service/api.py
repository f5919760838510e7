"""The network service's HTTP and WebSocket API: one module-level function per route, each given
the service and the caller (``deps``). Every route but health and the OpenAPI page needs the
access key or a session token; the work happens in :class:`~gaiamesh.service.service.MeshService`."""

# No `from __future__ import annotations`: FastAPI resolves the routes' annotations.
from importlib.metadata import version

from fastapi import APIRouter, WebSocket, WebSocketDisconnect
from fastapi.responses import FileResponse

from ..errors import Refused
from .auth import AuthError, credential, cross_site
from .deps import Svc, Who
from .models import (
    Ask,
    AutoChatSwitch,
    History,
    RunRequest,
    RunView,
    SessionCreated,
    SessionRequest,
    SessionView,
    StateChange,
    StreamRequest,
    StreamView,
)

__version__ = version("gaiamesh")
router = APIRouter()

# The routes are `async def`: they run on the event loop that owns the run queue, the relays
# and the event streams. A plain `def` route runs in a worker thread, where asyncio's objects
# are not safe (cancelling a running run from one raised "no running event loop").


@router.get("/api/health")
def health(svc: Svc) -> dict[str, object]:
    return {"status": "ok", "version": __version__, "queued": svc.queued}


@router.post("/api/runs", status_code=202)
async def submit(body: RunRequest, who: Who, svc: Svc) -> RunView:
    return await svc.submit(who, body)


@router.get("/api/runs")
async def list_runs(who: Who, svc: Svc) -> list[RunView]:
    return svc.list_runs(who)


@router.get("/api/runs/{run_id}")
async def get_run(run_id: str, who: Who, svc: Svc) -> RunView:
    return svc.run_view(who, run_id)


@router.delete("/api/runs/{run_id}")
async def cancel_run(run_id: str, who: Who, svc: Svc) -> RunView:
    return svc.cancel(who, run_id)


@router.get("/api/runs/{run_id}/artifacts", response_class=FileResponse)
async def artifacts(run_id: str, who: Who, svc: Svc) -> FileResponse:
    path = svc.artifacts(who, run_id)
    return FileResponse(path, media_type="application/gzip", filename=f"run_artifacts-{run_id}.tar.gz")


@router.websocket("/api/runs/{run_id}/events")
async def events(websocket: WebSocket, run_id: str, svc: Svc) -> None:
    # Credentials are checked before the handshake is accepted: a refusal is an HTTP 403.
    value, from_cookie = credential(websocket)
    try:
        if from_cookie and cross_site(websocket):
            raise AuthError("cross-site WebSocket")
        who = svc.authority.principal(value)
        sub = svc.subscribe(who, run_id)
    except (AuthError, Refused):
        await websocket.close(code=1008)
        return
    await websocket.accept()
    try:
        while (event := await sub.queue.get()) is not None:
            await websocket.send_text(event.model_dump_json())
        if sub.dropped:
            await websocket.close(code=1013, reason="subscriber fell too far behind; reconnect to replay")
        else:
            await websocket.close(code=1000)
    except WebSocketDisconnect:
        pass


@router.post("/api/sessions", status_code=201)
async def create_session(body: SessionRequest, who: Who, svc: Svc) -> SessionCreated:
    return await svc.create_session(who, body)


@router.get("/api/sessions")
async def list_sessions(who: Who, svc: Svc) -> list[SessionView]:
    return svc.sessions(who)


@router.get("/api/sessions/{session_id}")
async def get_session(session_id: str, who: Who, svc: Svc) -> SessionView:
    return svc.session(who, session_id)


@router.post("/api/sessions/{session_id}/state")
async def change_state(session_id: str, body: StateChange, who: Who, svc: Svc) -> SessionView:
    return svc.change_state(who, session_id, body.state)


@router.post("/api/sessions/{session_id}/autochat")
async def autochat(session_id: str, body: AutoChatSwitch, who: Who, svc: Svc) -> SessionView:
    return svc.switch_autochat(who, session_id, body.enabled)


@router.post("/api/sessions/{session_id}/messages", status_code=202)
async def ask(session_id: str, body: Ask, who: Who, svc: Svc) -> RunView:
    return svc.ask(who, session_id, body)


@router.get("/api/sessions/{session_id}/messages")
async def history(session_id: str, who: Who, svc: Svc) -> History:
    return svc.history(who, session_id)


@router.post("/api/streams", status_code=202)
async def submit_stream(body: StreamRequest, who: Who, svc: Svc) -> StreamView:
    return await svc.submit_stream(who, body)


@router.get("/api/streams")
async def list_streams(who: Who, svc: Svc) -> list[StreamView]:
    return svc.list_streams(who)


@router.get("/api/streams/{stream_id}")
async def get_stream(stream_id: str, who: Who, svc: Svc) -> StreamView:
    return svc.stream_view(who, stream_id)


@router.get("/api/streams/{stream_id}/items.csv", response_class=FileResponse)
async def stream_items(stream_id: str, who: Who, svc: Svc) -> FileResponse:
    path = svc.stream_items(who, stream_id)
    return FileResponse(path, media_type="text/csv", filename=f"items-{stream_id}.csv")
