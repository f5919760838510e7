"""``acp`` on its own wire: each agent is an ACP server made with ``acp-sdk``'s own app, and the
relay calls it with ``acp-sdk``'s own ``Client``.

The agent is one ACP agent named after its tool (``GET /agents`` lists it; its manifest's
metadata describes the tool, and ``annotations.gaiamesh`` carries the packet types it takes and
emits with their JSON schemas; ``server.py``). A run whose parts are all text is a text request,
which a tool that answers text answers with text parts, and any other refuses (``invalid_input``).
A frame is one run (``POST /runs``) whose input is one message with one part: content type
``application/json``, content the packet's canonical JSON. Each frame the agent emits while
handling it is one part of the run's output message: in ``sync`` mode all of them in the run the
response returns; in ``stream`` mode one ``message.part`` SSE event each, sent as it is emitted.
``async`` mode and the run lifecycle (``GET /runs/{id}``, ``/runs/{id}/events``) are the SDK's
and answer any ACP client; the relay uses ``sync``, or ``stream`` when asked to.

A bad frame is ACP's own error: a body that is not a run request is a 422 with ACP's ``Error``
(``invalid_input``), an unknown agent or run a 404 (``not_found``); a packet the agent cannot
decode (``FrameError``) fails its run with ``invalid_input`` (the run's status and error in
``sync`` mode, a ``run.failed`` event in ``stream`` mode). A run outlives its request, as ACP
means it to: a client that gives up does not stop the agent's handling.

ACP's manifest names no URL (a client reaches an agent at the server it listed it from), so
nothing baked in at start-up can bypass the relay's tap; the only absolute URLs the SDK makes
(the session history's resources) come from the request's ``Host``. The SDK's default CORS
grant to its public playground's origin is switched off (``enable_playground_cors=False``).

Four workarounds for acp-sdk 1.0.3 on the project's pins, each as small as it can be:

- ``acp_sdk.server`` imports its uvicorn runner, which annotates a parameter with
  ``uvicorn.config.LoopSetupType``, renamed ``LoopFactoryType`` in uvicorn 0.36 (Kludex/uvicorn
  #2435); the import fails with ``AttributeError`` (the same bug in the SDK's successor:
  i-am-bee/agentstack#1226). The old name is set to the new one before the import (``uvicorn_name.py``). The runner
  is not used: the app comes from ``create_app`` and runs on the agent's own uvicorn.
- ``create_app`` makes its thread pool and HTTP client in the app's lifespan, which the agent's
  native server does not run for the apps it mounts: :class:`_Started` enters it on first use.
- The SDK's ``Client`` posts its JSON bodies with no ``Content-Type``; FastAPI 0.132 and later
  refuse those with 422 (strict Content-Type checking, fastapi/fastapi#14978), so the SDK's own
  client, used as its documentation shows, could not start a run. The server takes a POST with
  no ``Content-Type`` and no ``Origin`` as JSON (:class:`JsonByDefault`): a program's client
  (the SDK's, curl's) sends no ``Origin``, while a browser sends one with every cross-site POST,
  so FastAPI's check still refuses what it guards against (a web page scripting these
  unauthenticated local servers). The relay's client still adds the header with an httpx
  request hook (its requests' bytes stay those of earlier results), and, with a response hook,
  says an error answer that is not ACP's JSON as its HTTP status, where the SDK would only fail
  to parse it; :meth:`AcpClient.aclose` removes both.
  The service's ACP endpoint (``service/acp.py``) serves the SDK's app too, and takes the same
  two: :class:`JsonByDefault` and :func:`not_a_run`.
- The SDK's ``Client`` builds a pydantic ``TypeAdapter(Event)`` (its schema, its validator) for
  every SSE event it reads (``Client._validate_stream``): 28 to 33 % of the relay's CPU in a
  stream of 1,000 items (docs/results/2026-12-05-stream-native-scale.md, "acp's store").
  :class:`SdkClient` is the SDK's ``Client`` reading them with one adapter, made once; the same
  validation and the same errors. Its servers' run store: ``store.py``.

Every error body is ACP's ``Error`` (code and message): the SDK words a body that is not a run
request with ``str()`` of FastAPI's validation error, which names the SDK's source file and line;
:func:`not_a_run` says what was wrong with the body and nothing of the server.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
from acp_sdk.client import Client
from acp_sdk.models import (
    ACPError,
    ArtifactEvent,
    ErrorEvent,
    Event,
    Message,
    MessagePart,
    MessagePartEvent,
    Run,
    RunAwaitingEvent,
    RunCancelledEvent,
    RunFailedEvent,
    RunStatus,
)
from httpx_sse import EventSource
from pydantic import TypeAdapter
from starlette.types import ASGIApp

from ..base import ProtocolError, canonical_json, loads_object
from ..native import AgentEndpoint, Binding, NativeClient, Peer, Undelivered
from .server import MEDIA_TYPE, JsonByDefault, not_a_run, server_app

__all__ = ["JsonByDefault", "not_a_run"]  # the service's ACP endpoint takes them from here
_NAME = re.compile(r"^[a-zA-Z0-9_\-]+$")  # what ACP's message role allows after "agent/"


def binding(protocol: str) -> Binding:
    return AcpBinding()


class AcpBinding(Binding):
    name = "acp"
    inner = "json"
    streams = True  # stream mode: one message.part event per frame, sent as the agent emits it
    mount = "/acp"

    def app(self, agent: AgentEndpoint, keys_dir: Path) -> ASGIApp:
        if not _NAME.match(agent.tool):
            raise ValueError(
                f"acp: the tool name {agent.tool!r} cannot name an ACP agent (letters, digits, _ and -)"
            )
        return server_app(agent)

    def client(self, peer: Peer, http: httpx.AsyncClient, stream: bool = False) -> NativeClient:
        return AcpClient(peer, http, stream)


# --- the relay's client -----------------------------------------------------------------------
class _Hooks:
    """httpx event hooks on the relay's client, for requests to one agent (``base_url``): the
    Content-Type the SDK's POSTs lack, and an error answer that is not ACP's JSON said as the
    HTTP status it is (the SDK would fail parsing it as JSON, and say only that)."""

    def __init__(self, base_url: str) -> None:
        self.prefix = base_url + "/"

    async def request(self, request: httpx.Request) -> None:
        if (
            request.method == "POST"
            and str(request.url).startswith(self.prefix)
            and "content-type" not in request.headers
            and request.headers.get("content-length", "0") != "0"
        ):
            request.headers["Content-Type"] = MEDIA_TYPE

    async def response(self, response: httpx.Response) -> None:
        if (
            response.is_error
            and str(response.request.url).startswith(self.prefix)
            and not response.headers.get("content-type", "").startswith(MEDIA_TYPE)
        ):
            response.raise_for_status()


def _sent(blob: bytes) -> Message:
    return Message(role="user", parts=[MessagePart(content_type=MEDIA_TYPE, content=blob.decode())])


def _frame(part: MessagePart) -> bytes:
    """One frame of the agent's answer, from the part that carried it, as canonical JSON."""
    if part.content_type != MEDIA_TYPE or part.content is None:
        raise Undelivered(
            f"acp: the agent answered a part that is not inline {MEDIA_TYPE} ({part.content_type})"
        )
    try:
        return canonical_json(loads_object(part.content.encode(), "acp message part"))
    except ProtocolError as exc:
        raise Undelivered(str(exc)) from None


def _failed(run: Run, how: str) -> Undelivered:
    error = f": {run.error.code}: {run.error.message}" if run.error else ""
    return Undelivered(f"acp: run {run.run_id} {how}{error}")


_EVENT: TypeAdapter[Event] = TypeAdapter(Event)


class SdkClient(Client):
    """acp-sdk's ``Client``, each SSE event validated by one ``TypeAdapter`` made once, where
    the SDK's ``_validate_stream`` (otherwise copied as it is) makes one for every event."""

    async def _validate_stream(self, event_source: EventSource) -> AsyncIterator[Event]:
        if event_source.response.is_error:
            await event_source.response.aread()
            self._raise_error(event_source.response)
        async for sse in event_source.aiter_sse():
            event: Event = _EVENT.validate_json(sse.data)
            if isinstance(event, ErrorEvent):
                raise ACPError(error=event.error)
            yield event


class AcpClient(NativeClient):
    """The relay's client of one agent: the SDK's ``Client`` on the relay's HTTP client."""

    def __init__(self, peer: Peer, http: httpx.AsyncClient, stream: bool) -> None:
        self.base_url = peer.base_url
        self.stream = stream
        self.http = http
        self.hooks = _Hooks(peer.base_url)
        http.event_hooks["request"].append(self.hooks.request)
        http.event_hooks["response"].append(self.hooks.response)
        self.sdk = SdkClient(client=http, manage_client=False)
        self.agent: str | None = None

    async def connect(self) -> None:
        """``GET /agents``: the server's one agent, whose name every run is addressed to."""
        try:
            agents = [agent.name async for agent in self.sdk.agents(base_url=self.base_url)]
        except (ACPError, httpx.HTTPError, ValueError) as exc:
            raise Undelivered(f"acp: listing the agents at {self.base_url} failed: {_said(exc)}") from None
        if len(agents) != 1:
            raise Undelivered(f"acp: {self.base_url} lists {len(agents)} agents, not the one it should serve")
        self.agent = agents[0]

    async def send(self, blob: bytes) -> AsyncIterator[bytes]:
        if self.agent is None:
            await self.connect()
        assert self.agent is not None
        try:
            if self.stream:
                async for frame in self._streamed(blob, self.agent):
                    yield frame
                return
            run = await self.sdk.run_sync(_sent(blob), agent=self.agent, base_url=self.base_url)
        except (ACPError, httpx.HTTPError, ValueError) as exc:
            raise Undelivered(f"acp: run of {self.agent} failed: {_said(exc)}") from None
        if run.status != RunStatus.COMPLETED:
            raise _failed(run, str(run.status.value))
        for message in run.output:
            for part in message.parts:
                yield _frame(part)

    async def _streamed(self, blob: bytes, agent: str) -> AsyncIterator[bytes]:
        async for event in self.sdk.run_stream(_sent(blob), agent=agent, base_url=self.base_url):
            if isinstance(event, MessagePartEvent | ArtifactEvent):
                yield _frame(event.part)
            elif isinstance(event, RunFailedEvent | RunCancelledEvent | RunAwaitingEvent):
                raise _failed(event.run, event.type.removeprefix("run."))

    async def aclose(self) -> None:
        # The HTTP client is the relay's: only the hooks added to it go.
        for kind, hook in (("request", self.hooks.request), ("response", self.hooks.response)):
            with contextlib.suppress(ValueError):
                self.http.event_hooks[kind].remove(hook)


def _said(exc: BaseException) -> str:
    """What the client saw: ACP's error (code and message), or the HTTP/transport failure."""
    if isinstance(exc, ACPError):
        return f"{exc.error.code}: {exc.error.message}"
    if isinstance(exc, httpx.HTTPStatusError):  # an error answer that is not ACP's Error
        return f"HTTP {exc.response.status_code} ({exc.response.headers.get('content-type')})"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
