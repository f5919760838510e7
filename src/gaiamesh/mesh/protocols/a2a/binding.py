"""``a2a`` on its own wire: each agent is an A2A 1.0 server made with the official ``a2a-sdk``,
and the relay calls it with the SDK's own client.

Agent side (``server.py``): the SDK's Starlette routes, mounted at :attr:`A2ABinding.mount`; the
agent card at ``/.well-known/agent-card.json`` (with the JSON schemas of the packets the agent
takes and emits in an extension's params) and the JSON-RPC endpoint at ``/`` (both relative to
the mount). A message of text parts only is a text request (``server.py``).
A frame is one ``SendMessage`` (or, streaming, ``SendStreamingMessage`` over SSE): a ``Message``
from the relay (role user, ``contextId`` = the run) with one *data* part holding the packet
object. ``SendMessage`` is answered with a ``Message`` (role agent) holding one data part per
frame the agent emits, in order, as the SDK's own examples answer. ``SendStreamingMessage`` is
answered with a ``Task``: one artifact per frame, each sent as it is made, then the state
``completed``; a Task because the SDK allows a message-only answer exactly one ``Message`` event
(a second raises ``InvalidAgentResponseError``), so frames can only leave one by one as a
Task's artifact updates. An answer with no frame is a completed Task with no artifact (either
method). The client reads both kinds of answer.

Relay side: ``A2ACardResolver`` fetches the card (:meth:`A2ANativeClient.connect`, the first request's
cost), ``ClientFactory`` makes the JSON-RPC client on the relay's ``httpx.AsyncClient``, and each
frame is one ``send_message``; ``history_length=0`` keeps the SDK from echoing the request
message back in the Task.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
from a2a import types as a2a_types
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.utils.errors import A2AError
from google.protobuf import json_format
from starlette.types import ASGIApp

from ..native import AgentEndpoint, Binding, NativeClient, Peer, Undelivered
from .server import packet_part, part_blob, server_app

_FAILED_STATES = frozenset(
    {
        a2a_types.TaskState.TASK_STATE_FAILED,
        a2a_types.TaskState.TASK_STATE_REJECTED,
        a2a_types.TaskState.TASK_STATE_CANCELED,
    }
)


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
    """The frames in one of the SDK's responses not yet yielded (``seen``: artifact ids): a
    Message's parts or a finished Task's artifacts (SendMessage), or one artifact update
    (SendStreamingMessage)."""
    kind = response.WhichOneof("payload")
    if kind == "task":
        _check_state(response.task.status)
        artifacts = list(response.task.artifacts)
    elif kind == "artifact_update":
        artifacts = [response.artifact_update.artifact]
    elif kind == "status_update":
        _check_state(response.status_update.status)
        artifacts = []
    else:  # a message-only answer (our agents' to SendMessage, as the SDK's) carries its frames as its parts
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
