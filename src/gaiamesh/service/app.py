"""The network service's HTTP and WebSocket API (FastAPI). Every route but health and the
OpenAPI page needs the access key or a session token; the work happens in ``MeshService``."""

# No `from __future__ import annotations`: FastAPI resolves the routes' annotations, and the
# dependency alias `Who` is local to create_app.
import asyncio
import contextlib
from collections.abc import AsyncIterator
from html import escape
from importlib.metadata import version
from typing import Annotated

from fastapi import Depends, FastAPI, HTTPException, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ..settings import Settings
from .auth import AuthError, Authority, Principal
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
)
from .runs import RunRefused
from .service import MeshService

bearer = HTTPBearer(auto_error=False)
__version__ = version("gaiamesh")


def create_app(settings: Settings) -> FastAPI:
    """The API over one :class:`MeshService` (built when the app starts)."""
    holder: dict[str, MeshService] = {}

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service = holder["service"] = MeshService(settings)
        worker = asyncio.create_task(service.runs.serve(), name="run-manager")
        try:
            yield
        finally:
            await service.runs.stop()  # runs in flight end `interrupted`, with what they have written
            worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await worker
            service.close()

    # No /docs or /redoc: their pages load scripts from a CDN, and this runs offline. The schema
    # itself is served at /openapi.json.
    app = FastAPI(
        title="Gaia Mesh network service", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None
    )

    @app.exception_handler(RunRefused)
    async def refused(request: Request, exc: RunRefused) -> JSONResponse:
        return JSONResponse(status_code=exc.status, content={"detail": str(exc)})

    def service() -> MeshService:
        return holder["service"]

    def principal(
        request: Request, creds: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
    ) -> Principal:
        credential = creds.credentials if creds else request.query_params.get("key")
        try:
            return service().authority.principal(credential)
        except AuthError as exc:
            raise HTTPException(401, str(exc), headers={"WWW-Authenticate": "Bearer"}) from exc

    Who = Annotated[Principal, Depends(principal)]

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def landing(request: Request) -> HTMLResponse:
        # The login URL (`/?key=...`) lands here. The live page is built on this API later; for
        # now: what is running and where the API is. Served locally, no outside asset.
        try:
            service().authority.principal(request.query_params.get("key"))
        except AuthError:
            body = "<p>Open the login URL that <code>make up</code> printed (it carries the access key).</p>"
            return HTMLResponse(_page(body), status_code=401)
        runs = service().list_runs(Principal(None))[-20:]
        rows = "".join(
            f"<tr><td>{escape(r.id)}</td><td>{escape(r.task_id)}</td><td>{r.state.value}</td>"
            f"<td>{escape(r.metrics.prediction) if r.metrics else ''}</td>"
            f"<td>{f'{r.metrics.quality_score:.3f}' if r.metrics else ''}</td></tr>"
            for r in reversed(runs)
        )
        body = (
            f"<p>{len(runs)} recent runs; the API's schema is at <a href='/openapi.json'>/openapi.json</a>.</p>"
            f"<table><tr><th>run</th><th>task</th><th>state</th><th>answer</th><th>quality</th></tr>{rows}</table>"
        )
        return HTMLResponse(_page(body))

    @app.get("/api/health")
    def health() -> dict[str, object]:
        s = service()
        return {"status": "ok", "version": __version__, "queued": s.runs.queued}

    @app.post("/api/runs", status_code=202)
    def submit(body: RunRequest, who: Who) -> RunView:
        return service().submit(who, body)

    @app.get("/api/runs")
    def list_runs(who: Who) -> list[RunView]:
        return service().list_runs(who)

    @app.get("/api/runs/{run_id}")
    def get_run(run_id: str, who: Who) -> RunView:
        return service().run_view(who, run_id)

    @app.delete("/api/runs/{run_id}")
    def cancel_run(run_id: str, who: Who) -> RunView:
        service().run_view(who, run_id)
        return service().runs.cancel(run_id)

    @app.get("/api/runs/{run_id}/artifacts", response_class=FileResponse)
    def artifacts(run_id: str, who: Who) -> FileResponse:
        service().run_view(who, run_id)
        path = service().runs.artifacts(run_id)
        return FileResponse(path, media_type="application/gzip", filename=f"run_artifacts-{run_id}.tar.gz")

    @app.websocket("/api/runs/{run_id}/events")
    async def events(websocket: WebSocket, run_id: str) -> None:
        # Credentials are checked before the handshake is accepted: a refusal is an HTTP 403.
        header = websocket.headers.get("authorization", "")
        credential = header.removeprefix("Bearer ").strip() or websocket.query_params.get("token")
        try:
            who = service().authority.principal(credential)
            service().run_view(who, run_id)
        except (AuthError, RunRefused):
            await websocket.close(code=1008)
            return
        sub = service().runs.subscribe(run_id)
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

    @app.post("/api/sessions", status_code=201)
    def create_session(body: SessionRequest, who: Who) -> SessionCreated:
        return service().create_session(who, body)

    @app.get("/api/sessions")
    def list_sessions(who: Who) -> list[SessionView]:
        return service().sessions(who)

    @app.get("/api/sessions/{session_id}")
    def get_session(session_id: str, who: Who) -> SessionView:
        return service().session(who, session_id)

    @app.post("/api/sessions/{session_id}/state")
    def change_state(session_id: str, body: StateChange, who: Who) -> SessionView:
        return service().change_state(who, session_id, body.state)

    @app.post("/api/sessions/{session_id}/autochat")
    def autochat(session_id: str, body: AutoChatSwitch, who: Who) -> SessionView:
        return service().switch_autochat(who, session_id, body.enabled)

    @app.post("/api/sessions/{session_id}/messages", status_code=202)
    def ask(session_id: str, body: Ask, who: Who) -> RunView:
        return service().ask(who, session_id, body)

    @app.get("/api/sessions/{session_id}/messages")
    def history(session_id: str, who: Who) -> History:
        return service().history(who, session_id)

    return app


def _page(body: str) -> str:
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>Gaia Mesh</title></head>"
        f"<body style='font-family:sans-serif;margin:2em'><h1>Gaia Mesh network service</h1>{body}</body></html>"
    )


def serve(settings: Settings) -> None:
    """``gaiamesh serve``: the API on ``SERVICE_HOST:SERVICE_PORT`` until stopped."""
    import uvicorn

    Authority(settings.access_key, settings.session_secret, settings.session_ttl)  # refuse bad secrets now

    uvicorn.run(create_app(settings), host=settings.service_host, port=settings.service_port, log_level="info")
