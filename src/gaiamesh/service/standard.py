"""What the mesh's standard endpoints share (``mcp.py``, ``a2a.py``, ``acp.py``): the access-key
check made before any SDK sees a request, a document and its question read from a message's
text parts and files, a run submitted as ``POST /api/runs`` submits one and followed through its
live events, and how it ended, said in words with the run's id and URLs.

Each endpoint only translates: its protocol's message in, these calls, its protocol's reply out."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from starlette.datastructures import URL
from starlette.requests import HTTPConnection
from starlette.responses import JSONResponse
from starlette.types import Scope

from ..errors import Forbidden, Refused, RunStatus
from .auth import Principal, credential
from .models import FrameEvent, NoteEvent, RunEvent, RunRequest, RunView, StateEvent, TeamEvent
from .service import MeshService

ADMIN = Principal(None)  # the access key's holder: only it passes the endpoints' check

# How a message carries a document and its question, said once for the cards, manifests and docs.
CONVENTION = (
    "Send the document and the question as text parts, the document first and the question last "
    "(or the document as a text file, then the question). A single text is read as the document "
    "followed by the question on its last line."
)


class OnService:
    """What an endpoint's handler holds: the app's state, whose ``service`` is built when the app
    starts (after the SDK's app that calls the handler is made)."""

    def __init__(self, state: Any) -> None:
        self.state = state

    @property
    def service(self) -> MeshService:
        service: MeshService = self.state.service
        return service


class BadAsk(ValueError):
    """A request the mesh cannot run; the message says what to send instead."""


# --- the key ----------------------------------------------------------------------------------
def refusal(conn: HTTPConnection, svc: MeshService, endpoint: str) -> Refused | None:
    """Why a caller without the access key is refused (401, or 403 for a session token); None
    lets it in. The login cookie does not act here: a page's script has no key to send."""
    value, from_cookie = credential(conn)
    try:
        who = svc.authority.principal(None if from_cookie else value)
        if not who.is_admin:
            raise Forbidden(f"the {endpoint} endpoint takes the access key: a session token does not open it")
    except Refused as exc:
        return exc
    return None


def refused_response(exc: Refused, **extra: str) -> JSONResponse:
    """The API's answer to a refusal (``{"detail": ...}``, its status and headers), with
    ``extra`` members where a protocol's client reads its own error shape."""
    body = {"detail": str(exc), **extra}
    return JSONResponse(body, status_code=exc.status, headers=dict(exc.headers))


def service_url(scope: Scope, mount: str) -> str:
    """The service's root as the caller reached it (scheme, Host, any proxy's prefix), from a
    request to an app mounted at ``mount``."""
    root = str(scope.get("root_path", "")).removesuffix(mount)
    return str(URL(scope={**scope, "path": root or "/", "query_string": b""})).rstrip("/")


# --- the document and the question ------------------------------------------------------------
def document_and_question(texts: list[str], files: list[str]) -> tuple[str, str]:
    """The document and the question of a message (see :data:`CONVENTION`): the last text is
    the question, the files and the texts before it the document; a lone text is the document
    with the question on its last line. What is empty or too large the run's own checks say."""
    if not texts:
        raise BadAsk("no question: send it as a text part, after the document")
    *before, question = texts
    parts = [*files, *before]
    if not parts:  # one text: the question is its last line
        lines = question.rstrip().splitlines()
        if len(lines) < 2:
            raise BadAsk("no document: send it as a text part (or a text file) before the question")
        parts, question = ["\n".join(lines[:-1])], lines[-1]
    return "\n\n".join(parts), question.strip()


def decoded(blob: bytes, media_type: str, name: str) -> str:
    """A file's bytes as the document's text: text only, UTF-8."""
    what = f"the file {name!r}" if name else "a file"
    if media_type and not media_type.startswith("text/"):
        raise BadAsk(f"{what} is {media_type}: the mesh reads text (text/plain)")
    try:
        return blob.decode()
    except UnicodeDecodeError as exc:
        raise BadAsk(f"{what} is not UTF-8 text") from exc


# --- the run ----------------------------------------------------------------------------------
async def submit(svc: MeshService, fields: dict[str, str]) -> RunView:
    """Queue the run as ``POST /api/runs`` does, its checks made by the API's own model and
    refusals (empty, too large, busy, a team not running), said as :class:`BadAsk`."""
    try:
        return await svc.submit(ADMIN, RunRequest.model_validate(fields))
    except ValidationError as exc:
        raise BadAsk("; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())) from exc
    except Refused as exc:
        raise BadAsk(str(exc)) from exc


async def follow(svc: MeshService, run_id: str) -> AsyncIterator[str]:
    """A line for a person for each event of the run worth one, from its first to its end."""
    sub = svc.subscribe(ADMIN, run_id)
    while (event := await sub.queue.get()) is not None:
        if (said := progress(event)) is not None:
            yield said


def progress(event: RunEvent) -> str | None:
    """What one live event says to a person following the run (None: nothing worth a line)."""
    if isinstance(event, StateEvent):
        return event.state.value + (f" ({event.error})" if event.error else "")
    if isinstance(event, FrameEvent):
        return f"{event.type or 'frame'} {event.src} -> {', '.join(event.dst) or '-'} ({event.status})"
    if isinstance(event, NoteEvent):
        return event.text
    if isinstance(event, TeamEvent):
        return "team: " + ", ".join(f"{a.node_id} {a.state}" for a in event.agents)
    return None


@dataclass(frozen=True)
class Outcome:
    """How a run ended, for a caller: ``ok`` (it answered), the reply's text (the answer on its
    first line, then the run), and the same as fields (``run_id``, ``run``, ``archive``, ...)."""

    ok: bool
    text: str
    fields: dict[str, Any]


def outcome(view: RunView, base: str) -> Outcome:
    """The run's answer as text, with its id and where its metrics and archive are; a run that
    did not end ok says how it ended and why."""
    where = {"run_id": view.id, "run": f"{base}/api/runs/{view.id}", "archive": f"{base}/api/runs/{view.id}/artifacts"}
    m = view.metrics
    about = f"run {view.id} ({view.strategy}, {view.protocol}, {view.transport}): {where['run']}, archive {where['archive']}"
    if m is None or m.status != RunStatus.OK:
        status = m.status if m is not None else view.state.value
        why = (m.error if m is not None else None) or view.error or "no reason recorded"
        return Outcome(False, f"the run ended {status}: {why}\n{about}", {**where, "status": str(status), "error": why})
    scored = {"exact_match": m.exact_match, "quality_score": m.quality_score} if m.exact_match is not None else {}
    lines = [m.prediction, "", about]
    if scored:
        lines.insert(2, f"gold: {m.answer} (exact match {m.exact_match})")
    return Outcome(True, "\n".join(lines), {**where, "answer": m.prediction, "status": str(m.status), **scored})
