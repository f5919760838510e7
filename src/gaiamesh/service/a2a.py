"""The whole mesh as one A2A agent on the service, at ``/a2a`` (the official ``a2a-sdk``, A2A 1.0
over JSON-RPC): its card at ``/a2a/.well-known/agent-card.json``, its JSON-RPC endpoint at
``/a2a/``. One skill, ``ask``: a message carrying a document and a question (text parts, or the
document as a text file; :data:`~gaiamesh.service.standard.CONVENTION`) is one ordinary run,
submitted as ``POST /api/runs`` submits one. The answer is a Task: while the run goes, a
``working`` status update per live event of the run (streamed to a client that streams), then
one artifact ``answer`` (the answer on its first line, then the run's id and URLs) and
``completed``; a run that does not end ok fails the task, its status message saying how it
ended and why. A message the mesh cannot run (no document, empty, over ``MAX_DOC_BYTES``, a
file that is not text) is JSON-RPC's invalid-params error, before any task. ``tasks/cancel``
cancels the run as ``DELETE /api/runs/<id>`` does.

Only the access key opens it (card included), as ``mcp.py`` decided: ``Authorization: Bearer
<key>`` checked before the SDK sees the request, whatever the ``Host``; the card declares that
scheme. The card's interface URL is the service's address as the caller reached it."""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from typing import Any

from a2a import types as a2a_types
from a2a.helpers import new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes import create_jsonrpc_routes
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH, PROTOCOL_VERSION_CURRENT, TransportProtocol
from a2a.utils.errors import InvalidParamsError
from starlette.applications import Starlette
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ..errors import Refused
from .api import __version__
from .standard import (
    ADMIN,
    CONVENTION,
    BadAsk,
    OnService,
    decoded,
    document_and_question,
    follow,
    outcome,
    refusal,
    refused_response,
    service_url,
    submit,
)

PATH = "/a2a"
TEXT = "text/plain"
INPUT_MODES = [TEXT, "text/markdown"]  # a text part, or a text file (any text/* is read as UTF-8)
SCHEME = "gaiamesh-access-key"
ANSWER = "answer"  # the artifact's name
KEPT_TASKS = 100  # tasks/get answers for the last ones (as the API's HISTORY_CAP keeps a session's last messages)
_BASE = "gaiamesh.service_url"  # the ServerCallContext's state key: the service as the caller reached it
DESCRIPTION = (
    "Gaia Mesh answers a question about a document with its team of agents (the service's "
    "strategy, protocol and transport). Each message is one run of the mesh; the answer names it."
)
SKILL = (
    f"Answer a question about a document, from the document alone. {CONVENTION} The answer is "
    "a text artifact: the answer on its first line, then the run that found it (its id, and the "
    "service's URLs of its metrics and archive). A run takes seconds to minutes: a streaming "
    "client gets a working status update for each step of it."
)


# --- the message --------------------------------------------------------------------------------
def read_message(message: a2a_types.Message) -> tuple[str, str]:
    """The document and the question a message carries (text parts, files as bytes)."""
    texts: list[str] = []
    files: list[str] = []
    for part in message.parts:
        kind = part.WhichOneof("content")
        if kind == "text":
            texts.append(part.text)
        elif kind == "raw":
            files.append(decoded(part.raw, part.media_type, part.filename))
        elif kind == "url":
            raise BadAsk("a file by URL: send its bytes (the service fetches nothing)")
        else:
            raise BadAsk(f"a {kind or 'empty'} part: send the document and the question as text")
    return document_and_question(texts, files)


def _said(updater: TaskUpdater, text: str) -> a2a_types.Message:
    return updater.new_agent_message([new_text_part(text, media_type=TEXT)])


class MeshExecutor(OnService, AgentExecutor):
    """A message is one run: its progress as status updates, its answer as the task's artifact."""

    def __init__(self, state: Any) -> None:
        super().__init__(state)
        self.runs: dict[str, str] = {}  # task id -> run id, for tasks/cancel

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        if message is None:  # the SDK builds the context from a SendMessageRequest: not expected
            raise InvalidParamsError(message="the request carries no message")
        try:  # refusals first, so no task is announced for them
            document, question = read_message(message)
            task = context.current_task or new_task_from_user_message(message)  # ValueError: an empty text part
            view = await submit(self.service, {"document": document, "question": question})
        except ValueError as exc:  # BadAsk among them
            raise InvalidParamsError(message=str(exc)) from exc
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        self.runs[task.id] = view.id
        async for said in follow(self.service, view.id):
            await updater.start_work(_said(updater, f"run {view.id}: {said}"))
        if self.runs.pop(task.id, None) is None:  # tasks/cancel took it, and said how it ended
            return
        ended = outcome(self.service.run_view(ADMIN, view.id), context.call_context.state.get(_BASE, ""))
        if not ended.ok:
            await updater.failed(_said(updater, ended.text))
            return
        await updater.add_artifact([new_text_part(ended.text, media_type=TEXT)], name=ANSWER, metadata=ended.fields)
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """``tasks/cancel``: the run is cancelled as ``DELETE /api/runs/<id>`` cancels it."""
        run_id = self.runs.pop(context.task_id or "", None)
        if run_id is not None:
            with contextlib.suppress(Refused):  # it ended meanwhile
                self.service.cancel(ADMIN, run_id)
        updater = TaskUpdater(event_queue, context.task_id or "", context.context_id or "")
        await updater.cancel(_said(updater, f"run {run_id} cancelled" if run_id else "cancelled"))


class RecentTasks(InMemoryTaskStore):
    """The SDK's in-memory task store, keeping the ``kept`` tasks saved last: each holds its
    document (up to ``MAX_DOC_BYTES``) and its progress, and the service lives long. A task in
    progress is saved at each update, so only ended ones go; their runs stay in the API."""

    def __init__(self, kept: int = KEPT_TASKS) -> None:
        super().__init__()
        self.kept = kept
        self.order: OrderedDict[str, ServerCallContext] = OrderedDict()

    async def save(self, task: a2a_types.Task, context: ServerCallContext) -> None:
        await super().save(task, context)
        self.order[task.id] = context
        self.order.move_to_end(task.id)
        while len(self.order) > self.kept:
            old, owner = self.order.popitem(last=False)
            await self.delete(old, owner)


# --- the card -----------------------------------------------------------------------------------
def agent_card(url: str) -> a2a_types.AgentCard:
    """The mesh's card: one skill, text in (parts or a text file), text out, the key as bearer."""
    return a2a_types.AgentCard(
        name="Gaia Mesh",
        description=DESCRIPTION,
        version=__version__,
        supported_interfaces=[
            a2a_types.AgentInterface(
                url=url, protocol_binding=TransportProtocol.JSONRPC, protocol_version=PROTOCOL_VERSION_CURRENT
            )
        ],
        capabilities=a2a_types.AgentCapabilities(streaming=True),
        security_schemes={
            SCHEME: a2a_types.SecurityScheme(
                http_auth_security_scheme=a2a_types.HTTPAuthSecurityScheme(
                    scheme="Bearer", description="the service's access key (GAIAMESH_ACCESS_KEY)"
                )
            )
        },
        security_requirements=[a2a_types.SecurityRequirement(schemes={SCHEME: a2a_types.StringList()})],
        default_input_modes=INPUT_MODES,
        default_output_modes=[TEXT],
        skills=[
            a2a_types.AgentSkill(
                id="ask", name="answer a question about a document", description=SKILL,
                tags=["question answering", "documents"], input_modes=INPUT_MODES, output_modes=[TEXT],
                examples=["<the document's text>", "Who founded the museum?"],
            )  # fmt: skip
        ],
    )


async def _card(request: Request) -> JSONResponse:
    return JSONResponse(agent_card_to_dict(agent_card(service_url(request.scope, PATH) + PATH + "/")))


class _Context(DefaultServerCallContextBuilder):
    """The SDK's call context, with the service's address as the caller reached it (for the
    run's URLs in the answer)."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state[_BASE] = service_url(request.scope, PATH)
        return context


class Endpoint:
    """``/a2a``: the access key checked, then the SDK's card and JSON-RPC routes."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refused = refusal(HTTPConnection(scope), scope["app"].state.service, "A2A")
            if refused is not None:
                await refused_response(refused)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def mount(app: Any) -> None:
    """Serve the mesh's A2A agent at ``/a2a`` of ``app`` (its service read from ``app.state``)."""
    executor = MeshExecutor(app.state)
    handler = DefaultRequestHandler(
        agent_executor=executor, task_store=RecentTasks(), agent_card=agent_card(f"http://localhost{PATH}/")
    )
    routes = [Route(AGENT_CARD_WELL_KNOWN_PATH, _card, methods=["GET"])]
    routes += create_jsonrpc_routes(handler, rpc_url="/", context_builder=_Context())
    app.mount(PATH, Endpoint(Starlette(routes=routes)))
