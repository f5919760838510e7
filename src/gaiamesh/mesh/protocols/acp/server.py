"""``acp``'s agent side: one mesh agent as an ACP agent of ``acp-sdk``'s own app, its manifest
saying what it takes and emits, a run per frame or per text request (the wire and the SDK's
workarounds: ``binding.py``)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ....errors import FrameError, Unanswerable
from ..native import AgentEndpoint, about, packets, text_refused, text_request
from . import uvicorn_name  # noqa: F401 (before acp_sdk.server loads)
from .store import make

# isort: split
from acp_sdk.models import ACPError, Annotations, Capability, Error, ErrorCode, Message, MessagePart, Metadata  # noqa: E402
from acp_sdk.server import AgentManifest, Context, RunYield, RunYieldResume, create_app  # noqa: E402
from acp_sdk.server.store import Store  # noqa: E402

MEDIA_TYPE = "application/json"
TEXT = "text/plain"  # a text request's parts, and its answer's, for a tool that answers text
WHERE = "the agent manifest's metadata.annotations.gaiamesh (takes_schema and emits_schema)"


def server_app(agent: AgentEndpoint, store: Store[Any] | None = None) -> ASGIApp:
    """The SDK's app serving ``agent`` as one ACP agent (:class:`ToolAgent`), on ``store`` or
    the one ``agent.acp_store`` names (``store.py``: ``keyed``, or the SDK's default ``memory``)."""
    # No playground CORS: it would let one public origin script these unauthenticated agents.
    app = create_app(ToolAgent(agent), store=store or make(agent.acp_store), enable_playground_cors=False)
    app.exception_handler(RequestValidationError)(not_a_run)  # in place of the SDK's
    return JsonByDefault(_Started(app))


def _invalid(message: str) -> ACPError:
    return ACPError(Error(code=ErrorCode.INVALID_INPUT, message=f"acp: {message}"))


def packet_of(messages: list[Message]) -> bytes:
    """The blob a run's input carries: one message with one inline ``application/json`` part."""
    if len(messages) != 1 or len(messages[0].parts) != 1:
        raise _invalid("a run's input must be one message with one part carrying the packet")
    part = messages[0].parts[0]
    if part.content_type != MEDIA_TYPE or part.content is None or part.content_encoding != "plain":
        raise _invalid(f"the message part must carry {MEDIA_TYPE} content inline, as plain text")
    blob: bytes = part.content.encode()
    return blob


class ToolAgent(AgentManifest):
    """One mesh agent as an ACP agent: its manifest, and a run per frame."""

    def __init__(self, agent: AgentEndpoint) -> None:
        self.agent = agent

    @property
    def name(self) -> str:
        return self.agent.tool

    @property
    def description(self) -> str:
        return about(self.agent, WHERE)

    @property
    def input_content_types(self) -> list[str]:
        return [MEDIA_TYPE, TEXT] if self.agent.answers_text else [MEDIA_TYPE]

    @property
    def output_content_types(self) -> list[str]:
        return self.input_content_types

    @property
    def metadata(self) -> Metadata:
        # annotations: ACP's room for what its schema does not name (extra members allowed)
        mesh = {"node_id": self.agent.node_id, **packets(self.agent)}
        return Metadata(
            capabilities=[Capability(name=self.agent.tool, description=self.agent.description)],
            annotations=Annotations.model_validate({"gaiamesh": mesh}),
            framework="gaiamesh",
        )

    async def run(self, input: list[Message], context: Context) -> AsyncGenerator[RunYield, RunYieldResume]:
        if _is_text(input):  # no JSON part: a text request
            for text in await self._text(input):
                yield MessagePart(content_type=TEXT, content=text)
            return
        # A FrameError (or a malformed input) fails the run with ACP's invalid_input error: the
        # run's status and error in sync mode, a run.failed event in stream mode.
        frames = self.agent.answer(packet_of(input), "json")
        try:
            try:
                frame = await anext(frames, None)
            except FrameError as exc:
                raise _invalid(str(exc)) from None
            while frame is not None:
                yield MessagePart(content_type=MEDIA_TYPE, content=frame.decode())
                frame = await anext(frames, None)
        finally:
            if isinstance(frames, AsyncGenerator):  # a run cancelled mid-answer stops the handling
                await frames.aclose()

    async def _text(self, input: list[Message]) -> list[str]:
        """The tool's answer to a text request (parts in order: the document, then the query),
        or the run failed with ``invalid_input`` saying what to send."""
        if not self.agent.answers_text:
            raise _invalid(text_refused(self.agent, WHERE))
        parts = [part for message in input for part in message.parts]
        if any(part.content is None or part.content_encoding != "plain" for part in parts):
            raise _invalid("send the document and the query inline, as plain text parts")
        try:
            return await self.agent.answer_text(*text_request([part.content or "" for part in parts]))
        except Unanswerable as exc:
            raise _invalid(str(exc)) from None


def _is_text(input: list[Message]) -> bool:
    parts = [part for message in input for part in message.parts]
    return bool(parts) and all((part.content_type or TEXT).startswith("text/") for part in parts)


async def not_a_run(request: Request, exc: Exception) -> JSONResponse:
    """A body that is not a run request: ACP's ``invalid_input``, saying where the body is wrong
    (the SDK's handler says ``str(exc)``, which ends with the SDK's file and line)."""
    errors = exc.errors() if isinstance(exc, RequestValidationError) else []
    said = "; ".join(
        f"{'.'.join(str(part) for part in e.get('loc', ()))}: {e.get('msg', '')}" for e in errors[:5]
    )
    error = Error(code=ErrorCode.INVALID_INPUT, message=f"acp: not a run request: {said or 'invalid'}")
    return JSONResponse(error.model_dump(mode="json"), status_code=422)


class JsonByDefault:
    """A POST with a body but no ``Content-Type`` and no ``Origin`` (a program's client, such as
    the SDK's own, not a browser's page) is read as ``application/json``, which FastAPI would
    otherwise refuse with 422 (see the module's docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            names = {name.lower() for name, _ in scope["headers"]}
            if b"content-type" not in names and b"origin" not in names:
                headers = [*scope["headers"], (b"content-type", MEDIA_TYPE.encode())]
                scope = {**scope, "headers": headers}
        await self.app(scope, receive, send)


class _Started:
    """``create_app``'s app makes its thread pool and HTTP client in its lifespan, and its run
    handler needs them; the agent's native server builds the apps it mounts on first use and
    runs no lifespan for them. So the lifespan is entered on the first request (or on the
    lifespan's own startup, where a server sends one) and held while the process lives."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self._stack: contextlib.AsyncExitStack | None = None
        self._lock = asyncio.Lock()

    async def _start(self) -> None:
        async with self._lock:
            if self._stack is None:
                stack = contextlib.AsyncExitStack()
                await stack.enter_async_context(self.app.router.lifespan_context(self.app))
                self._stack = stack

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if self._stack is None:
            await self._start()
        await self.app(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await self._start()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._stack is not None:
                    await self._stack.aclose()
                    self._stack = None
                await send({"type": "lifespan.shutdown.complete"})
                return
