"""``a2a`` on its own wire: each agent is an A2A 1.0 server made with the official ``a2a-sdk``,
and the relay calls it with the SDK's own client.

Agent side: the SDK's Starlette routes, mounted at :attr:`A2ABinding.mount`; the agent card at
``/.well-known/agent-card.json`` and the JSON-RPC endpoint at ``/`` (both relative to the mount).
A frame is one ``SendMessage`` (or, streaming, ``SendStreamingMessage`` over SSE): a ``Message``
from the relay (role user, ``contextId`` = the run) with one *data* part holding the packet
object. The agent answers with a ``Task``: one artifact per frame the agent emits, in order, then
the state ``completed``. A Task, not a Message, because the SDK allows a message-only answer
exactly one ``Message`` event (a second raises ``InvalidAgentResponseError``), so frames can only
leave one by one, as they are made, as a Task's artifact updates; both methods then answer alike
(``SendMessage`` returns the finished Task with its artifacts), and an answer with no frame is a
completed Task with no artifact.

Relay side: ``A2ACardResolver`` fetches the card (:meth:`A2ANativeClient.connect`, the first request's
cost), ``ClientFactory`` makes the JSON-RPC client on the relay's ``httpx.AsyncClient``, and each
frame is one ``send_message``; ``history_length=0`` keeps the SDK from echoing the request
message back in the Task.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from a2a import types as a2a_types
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.helpers import new_data_part, new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.utils.constants import PROTOCOL_VERSION_CURRENT, TransportProtocol
from a2a.utils.errors import A2AError, InvalidParamsError, UnsupportedOperationError
from google.protobuf import json_format
from starlette.applications import Starlette
from starlette.datastructures import URL
from starlette.types import ASGIApp, Receive, Scope, Send

from ....errors import FrameError
from ..base import canonical_json, loads_object
from ..native import AgentEndpoint, Binding, NativeClient, Peer, Undelivered

MEDIA_TYPE = "application/json"  # the card's input and output modes: a packet is a JSON object
CONSUMES_EXTENSION = "urn:gaiamesh:consumes"  # the card's extension whose params list the types
FRAME_ARTIFACT = "frame"  # each artifact's name: one frame of the agent's answer
CARD_VERSION = "1"
RPC_PATH = "/"
_FAILED_STATES = frozenset(
    {
        a2a_types.TaskState.TASK_STATE_FAILED,
        a2a_types.TaskState.TASK_STATE_REJECTED,
        a2a_types.TaskState.TASK_STATE_CANCELED,
    }
)

# The URL the caller used to reach this app (scheme, Host header, mount), set per request by
# _CallerURL: the card's interface URL must be it, since the relay reaches the agent through a tap
# on another port, and the SDK's card_modifier hook is given the card but not the request.
_caller_url: ContextVar[str] = ContextVar("a2a_caller_url", default="")


# --- the packet in a data part --------------------------------------------------------------------
def _narrow(value: Any) -> Any:
    """``value`` with every whole float made an int. A data part is a ``google.protobuf.Value``,
    which holds every number as a double, so ``seq: 3`` comes back as ``3.0``; the SDK documents
    the loss and its remedy (``a2a.helpers.get_data_parts``: "narrow floats with is_integer()").
    A float field that happened to be whole (``score: 1.0``) becomes ``1``, which a packet's model
    reads as the same float."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _narrow(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_narrow(item) for item in value]
    return value


def packet_part(blob: bytes) -> a2a_types.Part:
    """The data part carrying the packet whose canonical JSON is ``blob`` (FrameError if it is
    not a JSON object). No media type: a data part is JSON by its kind."""
    return new_data_part(loads_object(blob, "a2a frame"))


def part_blob(part: a2a_types.Part) -> bytes:
    """The canonical JSON of the packet a data part carries; ``ValueError`` for any other part."""
    if part.WhichOneof("content") != "data":
        raise ValueError(
            f"a2a: expected a data part carrying the packet, got a {part.WhichOneof('content')} part"
        )
    packet = json_format.MessageToDict(part.data)
    if not isinstance(packet, dict):
        raise ValueError(f"a2a: the data part holds a {type(packet).__name__}, not a packet object")
    return canonical_json(_narrow(packet))


# --- agent side -------------------------------------------------------------------------------
def _request_blob(message: a2a_types.Message) -> bytes:
    """The one packet a request message carries, or the protocol's invalid-params error."""
    parts = list(message.parts)
    if len(parts) != 1:
        raise InvalidParamsError(
            message=f"a2a: expected one data part carrying the packet, found {len(parts)} parts"
        )
    try:
        return part_blob(parts[0])
    except ValueError as exc:
        raise InvalidParamsError(message=str(exc)) from exc


async def _first_frame(frames: AsyncIterator[bytes]) -> bytes | None:
    """The first frame of an answer (None: the agent emits none); a blob the agent cannot decode
    (FrameError, raised before any frame) becomes the protocol's invalid-params error."""
    try:
        return await anext(frames)
    except StopAsyncIteration:
        return None
    except FrameError as exc:
        raise InvalidParamsError(message=f"a2a: the packet was refused: {exc}") from exc


class FrameExecutor(AgentExecutor):
    """Answers one frame: a Task whose artifacts are the agent's frames, each sent as it is made."""

    def __init__(self, agent: AgentEndpoint) -> None:
        self._agent = agent

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        if message is None:  # the SDK builds the context from a SendMessageRequest: not expected
            raise InvalidParamsError(message="a2a: the request carries no message")
        frames = self._agent.answer(_request_blob(message), "json")
        first = await _first_frame(frames)  # refusals first, so no Task is announced for them
        task = context.current_task or new_task_from_user_message(message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if first is not None:
            await updater.add_artifact([packet_part(first)], name=FRAME_ARTIFACT)
            async for frame in frames:
                await updater.add_artifact([packet_part(frame)], name=FRAME_ARTIFACT)
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        # A frame's handling is one step of the agent: it runs to its end or fails.
        raise UnsupportedOperationError(message="a2a: a frame's handling cannot be cancelled")


def agent_card(agent: AgentEndpoint, url: str) -> a2a_types.AgentCard:
    """The agent's card: its tool as the one skill, its packet types in an extension's params."""
    consumes = sorted(agent.consumes)
    extension = a2a_types.AgentExtension(
        uri=CONSUMES_EXTENSION, description="The packet types this agent works on.", required=False
    )
    extension.params.update({"consumes": consumes})
    return a2a_types.AgentCard(
        name=agent.node_id,
        description=agent.description,
        version=CARD_VERSION,
        supported_interfaces=[
            a2a_types.AgentInterface(
                url=url, protocol_binding=TransportProtocol.JSONRPC, protocol_version=PROTOCOL_VERSION_CURRENT
            )
        ],
        capabilities=a2a_types.AgentCapabilities(streaming=True, extensions=[extension]),
        default_input_modes=[MEDIA_TYPE],
        default_output_modes=[MEDIA_TYPE],
        skills=[
            a2a_types.AgentSkill(
                id=agent.tool, name=agent.tool, description=agent.description, tags=consumes or [agent.tool]
            )
        ],
    )


async def _card_for_caller(card: a2a_types.AgentCard) -> a2a_types.AgentCard:
    """The card with its interface at the URL this request came in on (the SDK's card_modifier)."""
    served = a2a_types.AgentCard()
    served.CopyFrom(card)
    served.supported_interfaces[0].url = _caller_url.get()
    return served


class _CallerURL:
    """ASGI wrapper: records the URL of the app's root as the caller used it (Host header and the
    mount's root_path) for the card, then passes the request on unchanged."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        root = {**scope, "path": scope.get("root_path", "") + "/", "query_string": b""}
        token = _caller_url.set(str(URL(scope=root)))
        try:
            await self._app(scope, receive, send)
        finally:
            _caller_url.reset(token)


def server_app(agent: AgentEndpoint) -> ASGIApp:
    """The SDK's card and JSON-RPC routes for ``agent``, relative to wherever they are mounted."""
    card = agent_card(agent, url=f"http://localhost{RPC_PATH}")  # placeholder: served per caller
    handler = DefaultRequestHandler(
        agent_executor=FrameExecutor(agent), task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = create_agent_card_routes(card, card_modifier=_card_for_caller)
    routes += create_jsonrpc_routes(handler, rpc_url=RPC_PATH)
    return _CallerURL(Starlette(routes=routes))


# --- relay side -------------------------------------------------------------------------------
def _answer_frames(parts: Iterable[a2a_types.Part]) -> Iterator[bytes]:
    for part in parts:
        try:
            yield part_blob(part)
        except ValueError as exc:
            raise Undelivered(f"a2a: the agent's answer is not a frame: {exc}") from exc


def _check_state(status: a2a_types.TaskStatus) -> None:
    if status.state in _FAILED_STATES:
        raise Undelivered(f"a2a: the agent's task ended {a2a_types.TaskState.Name(status.state)}")


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    return parts.scheme, parts.hostname or "", parts.port


class A2ANativeClient(NativeClient):
    """The relay's A2A client of one agent: the SDK's card resolver and JSON-RPC client."""

    def __init__(self, peer: Peer, http: httpx.AsyncClient, stream: bool) -> None:
        self._peer = peer
        self._http = http
        self._stream = stream
        self._client: Client | None = None

    async def connect(self) -> None:
        await self._connected()

    async def _connected(self) -> Client:
        """The SDK's client of this agent, made from its card on first use (the first request)."""
        if self._client is not None:
            return self._client
        try:
            card = await A2ACardResolver(self._http, self._peer.base_url).get_agent_card()
        except (A2AError, httpx.HTTPError) as exc:
            raise Undelivered(f"a2a: no agent card at {self._peer.base_url}: {exc}") from exc
        if stray := [i.url for i in card.supported_interfaces if _origin(i.url) != _origin(self._peer.base_url)]:
            # A card may name any URL (A2A 1.0 section 8.4 has signed cards for trusting one);
            # the relay knows its agents' addresses, so a card pointing elsewhere was altered on
            # its way or is not this agent's (bench-attacks' poison): refused, not followed.
            raise Undelivered(f"a2a: the agent card of {self._peer.node_id} names an interface at {stray[0]}, "
                              f"not at the address it was fetched from ({self._peer.base_url}): refused")  # fmt: skip
        # The factory adds the A2A-Version header to the httpx client's default headers: the
        # run's client then sends it on every request, as the SDK's own client does.
        factory = ClientFactory(ClientConfig(streaming=self._stream, httpx_client=self._http))
        try:
            self._client = factory.create(card)
        except ValueError as exc:  # the card names no JSON-RPC interface
            raise Undelivered(f"a2a: the agent card of {self._peer.node_id} is unusable: {exc}") from exc
        return self._client

    def _request(self, blob: bytes) -> a2a_types.SendMessageRequest:
        message = a2a_types.Message(
            message_id=str(uuid.uuid4()),
            context_id=self._peer.run_id,
            role=a2a_types.Role.ROLE_USER,
            parts=[packet_part(blob)],
        )
        return a2a_types.SendMessageRequest(
            message=message, configuration=a2a_types.SendMessageConfiguration(history_length=0)
        )

    async def send(self, blob: bytes) -> AsyncIterator[bytes]:
        client = await self._connected()
        request = self._request(blob)
        seen: set[str] = set()
        try:
            async for response in client.send_message(request):
                for frame in _response_frames(response, seen):
                    yield frame
        # A2AError: the agent's JSON-RPC error, or the SDK client's own (HTTP status, network,
        # timeout, an SSE error event); json_format.Error and ValueError: an answer it cannot read.
        except (A2AError, httpx.HTTPError, json_format.Error, ValueError) as exc:
            raise Undelivered(f"a2a: {type(exc).__name__}: {exc}") from exc

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()  # leaves the run's shared httpx client open
            self._client = None


def _response_frames(response: a2a_types.StreamResponse, seen: set[str]) -> Iterator[bytes]:
    """The frames in one of the SDK's responses not yet yielded (``seen``: artifact ids): the
    finished Task's artifacts (SendMessage), or one artifact update (SendStreamingMessage)."""
    kind = response.WhichOneof("payload")
    if kind == "task":
        _check_state(response.task.status)
        artifacts = list(response.task.artifacts)
    elif kind == "artifact_update":
        artifacts = [response.artifact_update.artifact]
    elif kind == "status_update":
        _check_state(response.status_update.status)
        artifacts = []
    else:  # a message-only answer (another A2A agent's idiom) carries its frames as its parts
        yield from _answer_frames(response.message.parts)
        return
    for artifact in artifacts:
        if artifact.artifact_id not in seen:
            seen.add(artifact.artifact_id)
            yield from _answer_frames(artifact.parts)


class A2ABinding(Binding):
    name = "a2a"
    inner = "json"
    streams = True
    mount = "/a2a"

    def app(self, agent: AgentEndpoint, keys_dir: Path) -> ASGIApp:
        return server_app(agent)

    def client(self, peer: Peer, http: httpx.AsyncClient, stream: bool = False) -> NativeClient:
        return A2ANativeClient(peer, http, stream)


def binding(protocol: str) -> Binding:
    return A2ABinding()
