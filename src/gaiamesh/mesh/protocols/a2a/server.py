"""``a2a``'s agent side: the SDK's card and JSON-RPC routes for one mesh agent, its card saying
what it takes and emits (the wire: ``binding.py``). A message with a data part is a frame,
answered by ``SendMessage`` with a ``Message`` holding the agent's frames (the SDK's own idiom)
and by ``SendStreamingMessage`` with a Task whose artifacts leave one by one. A message with text
parts only (and text files) is a text request, for a tool that answers text: a Task whose one
artifact holds a text part per passage."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextvars import ContextVar
from typing import Any

from a2a import types as a2a_types
from a2a.helpers import new_data_part, new_message, new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.utils.constants import PROTOCOL_VERSION_CURRENT, TransportProtocol
from a2a.utils.errors import InvalidParamsError, UnsupportedOperationError
from google.protobuf import json_format
from starlette.applications import Starlette
from starlette.datastructures import URL
from starlette.types import ASGIApp, Receive, Scope, Send

from ....errors import FrameError, Unanswerable
from ..base import canonical_json, loads_object
from ..native import AgentEndpoint, about, packets, takes, text_refused, text_request

MEDIA_TYPE = "application/json"  # the card's input and output modes: a packet is a JSON object
TEXT = "text/plain"  # and, for a tool that answers text, plain text
# The card's extension whose params list the packet types and carry their JSON schemas
# (mesh.protocols.native.packets); its URI kept from when it listed the types alone.
CONSUMES_EXTENSION = "urn:gaiamesh:consumes"
WHERE = f"the agent card's extension {CONSUMES_EXTENSION} (params takes_schema and emits_schema)"
FRAME_ARTIFACT = "frame"  # each artifact's name: one frame of the agent's answer
TEXT_ARTIFACT = "text"  # the artifact of a text request's answer: one text part per passage
CARD_VERSION = "1"
WHOLE_METHOD = "SendMessage"  # A2A 1.0's message/send: the answer is returned whole, not streamed
RPC_PATH = "/"

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


def _texts(message: a2a_types.Message) -> list[str]:
    """The texts of a text request, in order: its text parts, and text files sent as bytes."""
    texts = []
    for part in message.parts:
        kind = part.WhichOneof("content")
        if kind == "text" and part.text:
            texts.append(part.text)
        elif kind == "raw" and (part.media_type or TEXT).startswith("text/"):
            try:
                texts.append(part.raw.decode())
            except UnicodeDecodeError as exc:
                raise InvalidParamsError(
                    message=f"a2a: the file {part.filename!r} is not UTF-8 text"
                ) from exc
        else:
            what = (
                "an empty text part"
                if kind == "text"
                else f"a {kind or 'empty'} part ({part.media_type or 'no type'})"
            )
            raise InvalidParamsError(message=f"a2a: {what}: send the document and the query as text")
    return texts


def _whole_answer(context: RequestContext) -> bool:
    """Whether the caller takes the answer whole (``SendMessage``, the method the SDK's JSON-RPC
    dispatcher records in the call's state) rather than as it is made: a streaming method, or one
    this module does not know, gets the Task, which every method can carry."""
    return bool(context.call_context.state.get("method") == WHOLE_METHOD)


class FrameExecutor(AgentExecutor):
    """Answers one frame. Taken whole: a ``Message`` whose data parts are the agent's frames, as
    the SDK's own examples answer; streamed: a Task whose artifacts are the frames, each sent as
    it is made (a message-only answer may hold one ``Message`` event, so only a Task lets frames
    leave one by one). An answer with no frame is a completed Task with no artifact (a Message
    needs a part). A text request (a message with no data part): a Task with one text artifact."""

    def __init__(self, agent: AgentEndpoint) -> None:
        self._agent = agent

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        if message is None:  # the SDK builds the context from a SendMessageRequest: not expected
            raise InvalidParamsError(message="a2a: the request carries no message")
        if message.parts and all(part.WhichOneof("content") != "data" for part in message.parts):
            await self._text(context, message, event_queue)
            return
        frames = self._agent.answer(_request_blob(message), "json")
        first = await _first_frame(frames)  # refusals first, so no Task is announced for them
        if first is not None and _whole_answer(context):
            # A Message, not a Task: the Task's three events (the Task, its artifact, its
            # completion) and its store made the server's CPU a request 1.3x to 1.7x the SDK's
            # own echo (docs/results/2026-12-05-wire-floor.md, "a2a's reply").
            parts = [packet_part(first)] + [packet_part(frame) async for frame in frames]
            await event_queue.enqueue_event(new_message(parts, context_id=context.context_id))
            return
        task = context.current_task or new_task_from_user_message(message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if first is not None:
            await updater.add_artifact([packet_part(first)], name=FRAME_ARTIFACT)
            async for frame in frames:
                await updater.add_artifact([packet_part(frame)], name=FRAME_ARTIFACT)
        await updater.complete()

    async def _text(
        self, context: RequestContext, message: a2a_types.Message, event_queue: EventQueue
    ) -> None:
        if not self._agent.answers_text:
            raise InvalidParamsError(message=f"a2a: {text_refused(self._agent, WHERE)}")
        query, document = text_request(_texts(message))
        try:
            texts = await self._agent.answer_text(query, document)
        except Unanswerable as exc:  # refused before any Task is announced
            raise InvalidParamsError(message=f"a2a: {exc}") from exc
        task = context.current_task or new_task_from_user_message(message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.add_artifact(
            [new_text_part(text, media_type=TEXT) for text in texts], name=TEXT_ARTIFACT
        )
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        # A frame's handling is one step of the agent: it runs to its end or fails.
        raise UnsupportedOperationError(message="a2a: a frame's handling cannot be cancelled")


def agent_card(agent: AgentEndpoint, url: str) -> a2a_types.AgentCard:
    """The agent's card: its tool as the one skill, saying what goes in; its packet types and
    their JSON schemas in an extension's params."""
    extension = a2a_types.AgentExtension(
        uri=CONSUMES_EXTENSION,
        description="The packet types this agent takes and emits, and their JSON schemas.",
        required=False,
    )
    extension.params.update(packets(agent))
    modes = [MEDIA_TYPE, TEXT] if agent.answers_text else [MEDIA_TYPE]
    skill = (
        f"Send one data part holding a packet of type {' or '.join(takes(agent))} (its JSON schema: {WHERE})."
    )
    if agent.answers_text:
        skill += " Or send text parts: the document, then the query (the query alone: the document of the newest run the agent holds)."
    return a2a_types.AgentCard(
        name=f"Gaia Mesh {agent.tool} agent (node {agent.node_id})",
        description=about(agent, WHERE),
        version=CARD_VERSION,
        supported_interfaces=[
            a2a_types.AgentInterface(
                url=url, protocol_binding=TransportProtocol.JSONRPC, protocol_version=PROTOCOL_VERSION_CURRENT
            )
        ],
        capabilities=a2a_types.AgentCapabilities(streaming=True, extensions=[extension]),
        default_input_modes=modes,
        default_output_modes=modes,
        skills=[
            a2a_types.AgentSkill(
                id=agent.tool,
                name=agent.tool,
                description=f"{agent.description.rstrip('.')}. {skill}",
                tags=sorted(agent.consumes) or [agent.tool],
                input_modes=modes,
                output_modes=modes,
            )  # fmt: skip
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
