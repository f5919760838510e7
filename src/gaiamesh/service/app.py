"""The network service's HTTP and WebSocket API (FastAPI). Every route but health and the
OpenAPI page needs the access key or a session token; the work happens in ``MeshService``."""

# No `from __future__ import annotations`: FastAPI resolves the routes' annotations, and the
# dependency alias `Who` is local to create_app.
import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator
from importlib.metadata import version
from typing import Annotated

from fastapi import Depends, FastAPI, HTTPException, Request, WebSocket, WebSocketDisconnect
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles

from ..errors import Refused
from ..settings import Settings
from .auth import AuthError, Authority, Principal, credential, cross_site
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
from .page import STATIC, page_routes
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

    @app.exception_handler(Refused)
    async def refused(request: Request, exc: Refused) -> JSONResponse:
        return JSONResponse(status_code=exc.status, content={"detail": str(exc)})

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        # FastAPI's shape (a list of {loc, msg, type}), with pydantic's "Value error, " prefix
        # taken off the project's own messages.
        errors = [{"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")).removeprefix("Value error, "),
                   "type": e.get("type", "")} for e in exc.errors()]  # fmt: skip
        return JSONResponse(status_code=422, content={"detail": errors})

    @app.exception_handler(sqlite3.OperationalError)
    async def store_failed(request: Request, exc: sqlite3.OperationalError) -> JSONResponse:
        # A full or unwritable results folder under the store: say so; the service stays up.
        return JSONResponse(status_code=507, content={"detail": f"the service cannot record this: {exc} "
                                                                f"(is {settings.out_dir} full or unwritable?)"})

    def service() -> MeshService:
        return holder["service"]

    def principal(
        request: Request, creds: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
    ) -> Principal:
        # `creds` only documents the bearer scheme in the schema; `credential` reads it again,
        # then the page's login cookie, then ?key=.
        value, from_cookie = credential(request)
        if from_cookie and cross_site(request):
            raise HTTPException(403, "refused: the login cookie does not act for another site's page")
        try:
            return service().authority.principal(value)
        except AuthError as exc:
            raise HTTPException(401, str(exc), headers={"WWW-Authenticate": "Bearer"}) from exc

    Who = Annotated[Principal, Depends(principal)]

    # The routes are `async def`: they run on the event loop that owns the run queue, the relays
    # and the event streams. A plain `def` route runs in a worker thread, where asyncio's objects
    # are not safe (cancelling a running run from one raised "no running event loop").

    @app.get("/api/health")
    def health() -> dict[str, object]:
        s = service()
        return {"status": "ok", "version": __version__, "queued": s.queued}

    @app.post("/api/runs", status_code=202)
    async def submit(body: RunRequest, who: Who) -> RunView:
        return await service().submit(who, body)

    @app.get("/api/runs")
    async def list_runs(who: Who) -> list[RunView]:
        return service().list_runs(who)

    @app.get("/api/runs/{run_id}")
    async def get_run(run_id: str, who: Who) -> RunView:
        return service().run_view(who, run_id)

    @app.delete("/api/runs/{run_id}")
    async def cancel_run(run_id: str, who: Who) -> RunView:
        return service().cancel(who, run_id)

    @app.get("/api/runs/{run_id}/artifacts", response_class=FileResponse)
    async def artifacts(run_id: str, who: Who) -> FileResponse:
        path = service().artifacts(who, run_id)
        return FileResponse(path, media_type="application/gzip", filename=f"run_artifacts-{run_id}.tar.gz")

    @app.websocket("/api/runs/{run_id}/events")
    async def events(websocket: WebSocket, run_id: str) -> None:
        # Credentials are checked before the handshake is accepted: a refusal is an HTTP 403.
        value, from_cookie = credential(websocket)
        try:
            if from_cookie and cross_site(websocket):
                raise AuthError("cross-site WebSocket")
            who = service().authority.principal(value)
            sub = service().subscribe(who, run_id)
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

    @app.post("/api/sessions", status_code=201)
    async def create_session(body: SessionRequest, who: Who) -> SessionCreated:
        return await service().create_session(who, body)

    @app.get("/api/sessions")
    async def list_sessions(who: Who) -> list[SessionView]:
        return service().sessions(who)

    @app.get("/api/sessions/{session_id}")
    async def get_session(session_id: str, who: Who) -> SessionView:
        return service().session(who, session_id)

    @app.post("/api/sessions/{session_id}/state")
    async def change_state(session_id: str, body: StateChange, who: Who) -> SessionView:
        return service().change_state(who, session_id, body.state)

    @app.post("/api/sessions/{session_id}/autochat")
    async def autochat(session_id: str, body: AutoChatSwitch, who: Who) -> SessionView:
        return service().switch_autochat(who, session_id, body.enabled)

    @app.post("/api/sessions/{session_id}/messages", status_code=202)
    async def ask(session_id: str, body: Ask, who: Who) -> RunView:
        return service().ask(who, session_id, body)

    @app.get("/api/sessions/{session_id}/messages")
    async def history(session_id: str, who: Who) -> History:
        return service().history(who, session_id)

    app.include_router(page_routes(service, settings))
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app


def serve(settings: Settings) -> None:
    """``gaiamesh serve``: the API on ``SERVICE_HOST:SERVICE_PORT`` until stopped."""
    import uvicorn

    Authority(settings.access_key, settings.session_secret, settings.session_ttl)  # refuse bad secrets now

    uvicorn.run(create_app(settings), host=settings.service_host, port=settings.service_port, log_level="info")
