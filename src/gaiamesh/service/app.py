"""The network service's app: one :class:`MeshService` over its lifetime, the API's and the
page's routes (``api``, ``page``), the mesh as a standard agent (an MCP server, ``mcp``; an A2A
agent, ``a2a``; an ACP agent, ``acp``), and the translation of errors into HTTP answers, in one
place."""

# No `from __future__ import annotations`: FastAPI resolves the handlers' annotations.
import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles

from ..errors import Refused
from ..settings import Settings
from .a2a import mount as mount_a2a
from .acp import mount as mount_acp
from .api import __version__
from .api import router as api_router
from .auth import Authority
from .mcp import mount as mount_mcp
from .page import STATIC
from .page import router as page_router
from .service import MeshService


@contextlib.asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """The service, its run manager and its stream manager live as long as the app; stopping ends
    runs and the stream in flight ``interrupted``, with what they have written."""
    service = app.state.service = MeshService(app.state.settings)
    worker = asyncio.create_task(service.runs.serve(), name="run-manager")
    streamer = asyncio.create_task(service.streams.serve(), name="stream-manager")
    try:
        # The MCP sessions and the ACP app end first: their runs go on below.
        async with app.state.mcp.running(), app.state.acp.running():
            yield
    finally:
        await service.runs.stop()
        await service.streams.stop()  # the stream in flight and every process it started
        for task in (worker, streamer):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        service.close()


async def refused(request: Request, exc: Exception) -> JSONResponse:
    """A refusal of any kind: its HTTP status and headers are the kind's (``gaiamesh.errors``)."""
    status, headers = (exc.status, dict(exc.headers)) if isinstance(exc, Refused) else (400, {})
    return JSONResponse(status_code=status, content={"detail": str(exc)}, headers=headers)


async def invalid(request: Request, exc: Exception) -> JSONResponse:
    """A body that does not fit its model: FastAPI's shape (a list of {loc, msg, type}), with
    pydantic's "Value error, " prefix taken off the project's own messages."""
    found = exc.errors() if isinstance(exc, RequestValidationError) else []
    errors = [{"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")).removeprefix("Value error, "),
               "type": e.get("type", "")} for e in found]  # fmt: skip
    return JSONResponse(status_code=422, content={"detail": errors})


async def store_failed(request: Request, exc: Exception) -> JSONResponse:
    """A full or unwritable results folder under the store: say so; the service stays up."""
    where = request.app.state.settings.out_dir
    return JSONResponse(status_code=507, content={"detail": f"the service cannot record this: {exc} "
                                                            f"(is {where} full or unwritable?)"})  # fmt: skip


def create_app(settings: Settings) -> FastAPI:
    """The API and the page over one :class:`MeshService` (built when the app starts). No /docs
    or /redoc: their pages load scripts from a CDN, and this runs offline; the schema itself is
    served at /openapi.json."""
    app = FastAPI(
        title="Gaia Mesh network service",
        version=__version__,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    app.state.settings = settings
    app.add_exception_handler(Refused, refused)
    app.add_exception_handler(RequestValidationError, invalid)
    app.add_exception_handler(sqlite3.OperationalError, store_failed)
    app.include_router(api_router)
    app.state.mcp = mount_mcp(app)
    mount_a2a(app)
    app.state.acp = mount_acp(app)
    app.include_router(page_router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app


def serve(settings: Settings) -> None:
    """``gaiamesh serve``: the API on ``SERVICE_HOST:SERVICE_PORT`` until stopped."""
    import uvicorn

    Authority(settings.access_key, settings.session_secret, settings.session_ttl)  # refuse bad secrets now

    # The loop and HTTP parser named, not "auto": acp-sdk brings uvloop and httptools into the
    # image, and the relay runs in this loop (its timings stay those of asyncio's own loop).
    uvicorn.run(
        create_app(settings), host=settings.service_host, port=settings.service_port, log_level="info",
        loop="asyncio", http="h11",
    )  # fmt: skip
