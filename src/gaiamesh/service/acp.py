"""The whole mesh as one ACP agent on the service, at ``/acp`` (``acp-sdk``'s own app, as each
agent's ACP binding serves it): ``GET /acp/agents`` lists one agent, ``gaia-mesh``; a run of it
(``POST /acp/runs``, in any of ACP's modes) whose input carries a document and a question as
text parts (:data:`~gaiamesh.service.standard.CONVENTION`) is one ordinary run of the mesh,
submitted as ``POST /api/runs`` submits one. While it goes, each live event of the run is a
``generic`` event of the ACP run (``{"run_id", "progress"}``, streamed in ``stream`` mode); its
output is one ``text/plain`` part, the answer on its first line, then the run's id and URLs. An
input the mesh cannot run fails the ACP run with ``invalid_input``, a run of the mesh that does
not end ok with ``server_error``, each saying why. Cancelling the ACP run does not stop the
mesh's (the SDK cancels its own task, not the agent's generator): ``DELETE /api/runs/<id>`` does.

Only the access key opens it, checked before the SDK sees the request (``mcp.py``'s check,
whatever the ``Host``); the 401 carries ACP's ``Error`` members beside the API's ``detail``, so
the SDK's client raises it as an ``ACPError``. The SDK's client posts without a
``Content-Type``: the binding's :class:`JsonByDefault` reads such a POST as JSON here too."""

from __future__ import annotations

import base64
import binascii
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from fastapi.exceptions import RequestValidationError
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

from ..mesh.protocols.acp.binding import JsonByDefault, not_a_run
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

PATH = "/acp"
NAME = "gaia-mesh"
TEXT = "text/plain"
DESCRIPTION = (
    "Gaia Mesh answers a question about a document with its team of agents (the service's "
    f"strategy, protocol and transport), from the document alone. {CONVENTION} Each run is one "
    "run of the mesh: the output is the answer on its first line, then the run that found it."
)

# After the binding's import above: it makes acp_sdk.server importable on this uvicorn.
from acp_sdk.models import ACPError, Capability, Error, ErrorCode, Message, MessagePart, Metadata  # noqa: E402
from acp_sdk.server import AgentManifest, Context, RunYield, RunYieldResume, create_app  # noqa: E402


def read_input(messages: list[Message]) -> tuple[str, str]:
    """The document and the question of a run's input: its parts in order, texts inline, files
    (a named or base64 part) as the document."""
    texts: list[str] = []
    files: list[str] = []
    for part in (part for message in messages for part in message.parts):
        if part.content_url is not None or part.content is None:
            raise BadAsk("a part without inline content: send the document and the question as text")
        if part.content_encoding == "base64" or part.name:
            blob = _base64(part.content) if part.content_encoding == "base64" else part.content.encode()
            files.append(decoded(blob, part.content_type or "", part.name or ""))
        elif (part.content_type or TEXT).startswith("text/"):
            texts.append(part.content)
        else:
            raise BadAsk(f"a {part.content_type} part: send the document and the question as text")
    return document_and_question(texts, files)


def _base64(content: str) -> bytes:
    try:
        return base64.b64decode(content, validate=True)
    except binascii.Error as exc:
        raise BadAsk("a base64 part that is not base64") from exc


def _error(code: ErrorCode, message: str) -> ACPError:
    return ACPError(Error(code=code, message=message))


class MeshAgent(OnService, AgentManifest):
    """The mesh as one ACP agent: a run of it is a run of the mesh."""

    @property
    def name(self) -> str:
        return NAME

    @property
    def description(self) -> str:
        return DESCRIPTION

    @property
    def input_content_types(self) -> list[str]:
        return [TEXT]

    @property
    def output_content_types(self) -> list[str]:
        return [TEXT]

    @property
    def metadata(self) -> Metadata:
        return Metadata(
            capabilities=[Capability(name="ask", description="answer a question about a document")],
            framework="gaiamesh", natural_languages=["English"], tags=["question answering", "documents"],
        )  # fmt: skip

    async def run(self, input: list[Message], context: Context) -> AsyncGenerator[RunYield, RunYieldResume]:
        try:
            document, question = read_input(input)
            view = await submit(self.service, {"document": document, "question": question})
        except BadAsk as exc:
            raise _error(ErrorCode.INVALID_INPUT, str(exc)) from None
        async for said in follow(self.service, view.id):
            yield {"run_id": view.id, "progress": said}
        ended = outcome(self.service.run_view(ADMIN, view.id), service_url(context.request.scope, PATH))
        if not ended.ok:
            raise _error(ErrorCode.SERVER_ERROR, ended.text)
        yield MessagePart(content=ended.text, content_type=TEXT)


class Endpoint:
    """``/acp``: the access key checked, then the SDK's app, run over the service's lifetime."""

    def __init__(self, app: Any) -> None:
        self.sdk = app
        self.app: ASGIApp = JsonByDefault(app)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refused = refusal(HTTPConnection(scope), scope["app"].state.service, "ACP")
            if refused is not None:  # ACP's Error members too, for the SDK's client to raise
                code = "unauthorized" if refused.status == 401 else "forbidden"
                await refused_response(refused, code=code, message=str(refused))(scope, receive, send)
                return
        # The SDK names its routes by url_for (a session's history): its own router, not the service's.
        await self.app({k: v for k, v in scope.items() if k != "router"}, receive, send)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The SDK app's lifespan (its thread pool and HTTP client): a mount does not run it."""
        async with self.sdk.router.lifespan_context(self.sdk):
            yield


def mount(app: Any) -> Endpoint:
    """Serve the mesh's ACP agent at ``/acp`` of ``app``; the app's lifespan runs
    :meth:`Endpoint.running`."""
    # No playground CORS: the SDK's default grants a public origin scripts against this agent.
    sdk = create_app(MeshAgent(app.state), enable_playground_cors=False)
    sdk.exception_handler(RequestValidationError)(not_a_run)  # in place of the SDK's
    endpoint = Endpoint(sdk)
    app.mount(PATH, endpoint)
    return endpoint
