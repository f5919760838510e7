"""The live web page: server-rendered Jinja2 pages and htmx fragments over :class:`MeshService`.

The person holding the access key logs in once (the login URL ``/?key=…`` or the key typed into
the login form); from then on a signed login token travels in an HttpOnly, SameSite=Strict
cookie. Fragments take the API's own bodies as JSON (the page's htmx sends JSON), so every
schema stays the one in :mod:`gaiamesh.service.models`; errors come back as the API's
``{"detail": …}`` and the page puts them into words.
"""

# No `from __future__ import annotations`: FastAPI resolves the routes' annotations.
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse
from fastapi.templating import Jinja2Templates
from pydantic import ConfigDict, Field

from ...errors import Refused, Unauthorized
from ...mesh.protocols import available
from ...mesh.routing import RoutingMode
from ...tasks import bundled_names
from ..auth import COOKIE, AuthError, Principal, credential, cross_site
from ..deps import Svc
from ..models import (
    Ask,
    AutoChat,
    Queued,
    RunOptions,
    RunRequest,
    RunState,
    RunView,
    SessionRequest,
    SessionState,
    StreamRequest,
)
from ..service import MeshService
from ..streams import stream_sets
from .views import comparison, figures, group_turns

HERE = Path(__file__).parent
STATIC = HERE / "static"
templates = Jinja2Templates(directory=HERE / "templates")
templates.env.globals["stream_figures"] = figures  # _stream.html puts a stream's summary into words


class NotLoggedIn(Unauthorized):
    """A page was asked for without a valid login: a page shows the login form with ``reason``
    (empty when no credential came at all), a fragment answers 401 with it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason or "not logged in: open the login URL that make up printed")
        self.reason = reason


class Batch(RunOptions):
    """``POST /ui/runs``: one run, or a batch of bundled tasks that one session runs one after
    another (AutoChat)."""

    model_config = ConfigDict(extra="forbid")

    tasks: list[str] = Field(min_length=1, max_length=100, description="bundled task names")


router = APIRouter(include_in_schema=False)


def login(svc: MeshService, request: Request) -> Principal:
    value, from_cookie = credential(request)
    if not value:
        raise NotLoggedIn("")
    if from_cookie and cross_site(request):
        raise NotLoggedIn("a request from another site's page was refused")
    try:
        return svc.authority.principal(value)
    except AuthError as exc:
        raise NotLoggedIn(str(exc)) from exc


def fragment_login(request: Request, svc: Svc) -> Principal:
    return login(svc, request)  # NotLoggedIn is an Unauthorized: the app answers it 401


Who = Annotated[Principal, Depends(fragment_login)]


def base(svc: MeshService, request: Request, who: Principal, **extra: Any) -> dict[str, Any]:
    settings = svc.settings
    return {
        "request": request,
        "who": who,
        "sessions": list(reversed(svc.sessions(who))),
        "tasks": bundled_names(settings.tasks_dir),
        "protocols": available(),
        "routings": [m.value for m in RoutingMode],
        "transports": ["relay", "native"],
        "strategies": ["pipeline", "orchestrated"],
        "defaults": {
            "protocol": settings.protocol,
            "transport": settings.transport,
            "routing": settings.routing.value,
            "strategy": settings.strategy,
        },  # fmt: skip
        "max_doc_bytes": settings.max_doc_bytes,
        **extra,
    }


def login_page(request: Request, reason: str) -> HTMLResponse:
    return templates.TemplateResponse(request, "login.html", {"reason": reason}, status_code=401)


# --- pages -----------------------------------------------------------------------------
@router.get("/", response_class=HTMLResponse)
async def ask_page(
    request: Request, svc: Svc, session: str | None = None, key: str | None = None
) -> Response:
    if key is not None:  # the login URL: trade the key for a cookie, and drop it from the address
        if not svc.authority.is_key(key):
            return login_page(request, "that is not the access key: copy the login URL again from make up")
        token, expires = svc.authority.issue_login()
        target = f"/?session={session}" if session else "/"
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(
            COOKIE, token, max_age=int(svc.settings.session_ttl), httponly=True, samesite="strict"
        )
        return response
    try:
        who = login(svc, request)
    except NotLoggedIn as exc:
        return login_page(request, exc.reason)
    current = None
    if session:
        try:
            current = svc.session(who, session)
        except Refused:
            current = None
    context = base(svc, request, who, current=current, page="ask")
    if current is not None:
        context |= conversation(svc, who, current.id)
    return templates.TemplateResponse(request, "ask.html", context)


@router.get("/runs", response_class=HTMLResponse)
async def runs_page(request: Request, svc: Svc) -> Response:
    try:
        who = login(svc, request)
    except NotLoggedIn as exc:
        return login_page(request, exc.reason)
    return templates.TemplateResponse(
        request, "runs.html", base(svc, request, who, page="runs", runs=recent(svc, who))
    )


@router.get("/runs/{run_id}", response_class=HTMLResponse)
async def run_page(request: Request, run_id: str, svc: Svc) -> Response:
    try:
        who = login(svc, request)
    except NotLoggedIn as exc:
        return login_page(request, exc.reason)
    try:
        run = svc.run_view(who, run_id)
    except Refused as exc:
        return templates.TemplateResponse(
            request,
            "problem.html",
            base(svc, request, who, page="runs", problem=str(exc)),
            status_code=exc.status,
        )
    return templates.TemplateResponse(request, "run.html", base(svc, request, who, page="runs", run=run))


@router.get("/streams", response_class=HTMLResponse)
async def streams_page(request: Request, svc: Svc) -> Response:
    try:
        who = login(svc, request)
    except NotLoggedIn as exc:
        return login_page(request, exc.reason)
    return templates.TemplateResponse(request, "streams.html", streams_context(svc, request, who))


@router.get("/streams/{stream_id}", response_class=HTMLResponse)
async def stream_page(request: Request, stream_id: str, svc: Svc) -> Response:
    try:
        who = login(svc, request)
    except NotLoggedIn as exc:
        return login_page(request, exc.reason)
    try:
        stream = svc.stream_view(who, stream_id)
    except Refused as exc:
        return templates.TemplateResponse(
            request, "problem.html", base(svc, request, who, page="streams", problem=str(exc)), status_code=exc.status
        )
    return templates.TemplateResponse(request, "stream.html", base(svc, request, who, page="streams", stream=stream))


@router.get("/favicon.ico")
async def favicon() -> FileResponse:
    # browsers ask for it whatever the page links; the page's own icon (no 404 in the log)
    return FileResponse(STATIC / "favicon.svg", media_type="image/svg+xml")


@router.post("/logout")
async def logout() -> Response:
    response = RedirectResponse("/", status_code=303)
    response.delete_cookie(COOKIE, httponly=True, samesite="strict")
    return response


# --- fragments: sessions ---------------------------------------------------------------
def conversation(svc: MeshService, who: Principal, session_id: str) -> dict[str, Any]:
    view = svc.session(who, session_id)
    history = svc.history(who, session_id)
    runs = {r: svc.run_view(who, r) for r in view.runs}
    turns = group_turns(history.messages, runs)
    last = history.messages[-1].id if history.messages else 0
    latest = view.runs[-1] if view.runs else None
    # what the page shows changes with a new message, the session's state or its run's state
    version = f"{last}-{view.state.value}-{runs[latest].state.value if latest else ''}"
    return {
        "current": view,
        "turns": turns,
        "dropped": history.dropped,
        "version": version,
        "latest_run": latest,
    }


@router.post("/ui/sessions", status_code=201)
async def new_session(body: SessionRequest, who: Who, svc: Svc) -> Response:
    created = await svc.create_session(who, body)
    return Response(status_code=201, headers={"HX-Redirect": f"/?session={created.id}"})


@router.get("/ui/sessions/{session_id}/conversation", response_class=HTMLResponse)
async def get_conversation(
    request: Request, session_id: str, who: Who, svc: Svc, version: str = ""
) -> Response:
    context = conversation(svc, who, session_id)
    if version and version == context["version"]:
        return Response(status_code=204)  # nothing new: htmx keeps what is shown
    return conversation_fragment(svc, request, who, context)


@router.post("/ui/sessions/{session_id}/messages", response_class=HTMLResponse)
async def ask(request: Request, session_id: str, body: Ask, who: Who, svc: Svc) -> Response:
    svc.ask(who, session_id, body)
    return conversation_fragment(svc, request, who, conversation(svc, who, session_id))


def conversation_fragment(
    svc: MeshService, request: Request, who: Principal, context: dict[str, Any]
) -> Response:
    # the sessions list rides along (out of band): its states change with the conversation
    sessions = list(reversed(svc.sessions(who)))
    extra = {"request": request, "oob": True, "sessions": sessions}
    return templates.TemplateResponse(request, "_conversation.html", {**context, **extra})


@router.post("/ui/sessions/{session_id}/end")
async def end(session_id: str, who: Who, svc: Svc) -> Response:
    view = svc.session(who, session_id)
    if view.autochat is not None and view.autochat.enabled:
        svc.switch_autochat(who, session_id, False)  # first, or it would send the next message
    if view.state is SessionState.RUNNING:
        for run_id in view.runs:
            if svc.run_view(who, run_id).state in (RunState.QUEUED, RunState.RUNNING):
                svc.cancel(who, run_id)  # the session goes STOP when its run has ended
    elif view.state is SessionState.INIT:
        svc.change_state(who, session_id, SessionState.STOP)
    return Response(status_code=204, headers={"HX-Refresh": "true"})


# --- fragments: runs -------------------------------------------------------------------
def recent(svc: MeshService, who: Principal) -> list[RunView]:
    return list(reversed(svc.list_runs(who)))[:200]


@router.get("/ui/runs", response_class=HTMLResponse)
async def runs_table(request: Request, who: Who, svc: Svc) -> Response:
    return templates.TemplateResponse(request, "_runs.html", {"request": request, "runs": recent(svc, who)})


@router.post("/ui/runs", response_class=HTMLResponse)
async def start(request: Request, body: Batch, who: Who, svc: Svc) -> Response:
    options = body.model_dump(exclude={"tasks"}, exclude_none=True)
    if len(body.tasks) == 1:
        run = await svc.submit(who, RunRequest(task=body.tasks[0], **options))
        where = f"queue position {run.queue_position}" if run.queue_position else "starting"
        note = f"Started run {run.id[:8]}: {run.task_id}, {run.strategy} · {run.protocol} ({where})."
    else:  # a batch: one session whose AutoChat sends each task in turn
        autochat = AutoChat(queue=[Queued(task=t) for t in body.tasks], max_turns=len(body.tasks))
        await svc.create_session(who, SessionRequest(task=body.tasks[0], autochat=autochat, **options))
        note = f"Started a batch of {len(body.tasks)} tasks, run one after another: {', '.join(body.tasks)}."
    context = {"request": request, "runs": recent(svc, who), "note": note}
    return templates.TemplateResponse(request, "_runs.html", context)


@router.post("/ui/runs/{run_id}/cancel", response_class=HTMLResponse)
async def cancel(request: Request, run_id: str, who: Who, svc: Svc) -> Response:
    svc.cancel(who, run_id)
    return templates.TemplateResponse(request, "_runs.html", {"request": request, "runs": recent(svc, who)})


# --- fragments: streams ----------------------------------------------------------------
def streams_context(svc: MeshService, request: Request, who: Principal) -> dict[str, Any]:
    names = [*stream_sets(svc.settings), *bundled_names(svc.settings.tasks_dir)]
    return base(svc, request, who, page="streams", streams=svc.list_streams(who), stream_names=names)


def streams_fragment(svc: MeshService, request: Request, who: Principal) -> Response:
    return templates.TemplateResponse(request, "_streams.html", {"request": request, "streams": svc.list_streams(who)})


@router.get("/ui/streams", response_class=HTMLResponse)
async def streams_table(request: Request, who: Who, svc: Svc) -> Response:
    return streams_fragment(svc, request, who)


@router.post("/ui/streams", response_class=HTMLResponse)
async def start_stream(request: Request, body: StreamRequest, who: Who, svc: Svc) -> Response:
    await svc.submit_stream(who, body)
    return streams_fragment(svc, request, who)


@router.get("/ui/streams/{stream_id}", response_class=HTMLResponse)
async def stream_fragment(request: Request, stream_id: str, who: Who, svc: Svc) -> Response:
    stream = svc.stream_view(who, stream_id)
    return templates.TemplateResponse(request, "_stream.html", {"request": request, "stream": stream})


@router.get("/ui/compare")
async def compare(who: Who, svc: Svc) -> JSONResponse:
    return JSONResponse(comparison(svc.list_runs(who)))
