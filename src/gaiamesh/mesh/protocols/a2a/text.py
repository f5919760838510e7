"""An A2A agent someone else wrote, as one member of a team: a text message in, the text of its
answer out, with a2a-sdk's own card resolver and client (``mesh/external/``).

The card is fetched through the relay's counting tap; its JSON-RPC interface must be at the
address AGENTS names (a card pointing elsewhere is refused, as for the team's own agents), and
the client is made on the tap's address in its place, so every request crosses the tap. The
answer's text is the finished Task's artifacts' text parts (or, if it has none, its status
message's), or a Message's text parts: what a2a-sdk's examples answer with.
"""

from __future__ import annotations

import uuid
from urllib.parse import urlsplit, urlunsplit

import httpx
from a2a import types as a2a_types
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.helpers import get_artifact_text, get_message_text, new_text_part
from a2a.utils.errors import A2AError
from google.protobuf import json_format

from ..native import TextClient, Undelivered

_FAILED = frozenset(
    {
        a2a_types.TaskState.TASK_STATE_FAILED,
        a2a_types.TaskState.TASK_STATE_REJECTED,
        a2a_types.TaskState.TASK_STATE_CANCELED,
        a2a_types.TaskState.TASK_STATE_AUTH_REQUIRED,
        a2a_types.TaskState.TASK_STATE_INPUT_REQUIRED,
    }
)


def _origin(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    return parts.scheme, parts.hostname or "", parts.port or 80


def _moved(url: str, through: str) -> str:
    """``url`` with the scheme and address of ``through`` (the tap), its path kept."""
    parts, tap = urlsplit(url), urlsplit(through)
    return urlunsplit((tap.scheme, tap.netloc, parts.path, parts.query, parts.fragment))


class A2ATextClient(TextClient):
    def __init__(self, url: str, through: str, http: httpx.AsyncClient, context: str) -> None:
        self.url = url
        self.through = through
        self.http = http
        self.context = context  # the run: one A2A context for every message of it
        self._client: Client | None = None

    async def connect(self) -> None:
        try:
            card = await A2ACardResolver(self.http, self.through).get_agent_card()
        except (A2AError, httpx.HTTPError, json_format.Error, ValueError) as exc:
            raise Undelivered(f"a2a: no agent card at {self.url}: {exc}") from exc
        for interface in card.supported_interfaces:
            if _origin(interface.url) != _origin(self.url):
                raise Undelivered(f"a2a: the agent card at {self.url} names an interface at {interface.url}, "
                                  "not at the address AGENTS names: refused")  # fmt: skip
            interface.url = _moved(interface.url, self.through)
        factory = ClientFactory(ClientConfig(streaming=False, httpx_client=self.http))
        try:
            self._client = factory.create(card)
        except ValueError as exc:  # the card names no interface the SDK's client speaks
            raise Undelivered(f"a2a: the agent card at {self.url} is unusable: {exc}") from exc

    async def ask(self, text: str) -> str:
        if self._client is None:
            await self.connect()
        assert self._client is not None
        message = a2a_types.Message(message_id=str(uuid.uuid4()), context_id=self.context,
                                    role=a2a_types.Role.ROLE_USER, parts=[new_text_part(text)])  # fmt: skip
        request = a2a_types.SendMessageRequest(
            message=message, configuration=a2a_types.SendMessageConfiguration(history_length=0)
        )
        texts: list[str] = []
        try:
            async for response in self._client.send_message(request):
                texts.append(_text(response))
        # A2AError: the agent's JSON-RPC error or the SDK client's own (HTTP status, network,
        # timeout); json_format.Error and ValueError: an answer it cannot read.
        except (A2AError, httpx.HTTPError, json_format.Error, ValueError) as exc:
            raise Undelivered(f"a2a: {type(exc).__name__}: {exc}") from exc
        return "\n".join(t for t in texts if t)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()  # leaves the run's httpx client open
            self._client = None


def _text(response: a2a_types.StreamResponse) -> str:
    """The text of one of the SDK's responses: a Message's, or a finished Task's."""
    kind = response.WhichOneof("payload")
    if kind == "message":
        return get_message_text(response.message)
    if kind != "task":
        return ""  # not streaming: the SDK hands back the finished Task or a Message
    task = response.task
    if task.status.state in _FAILED:
        why = get_message_text(task.status.message) if task.status.HasField("message") else ""
        raise Undelivered(f"a2a: the agent's task ended {a2a_types.TaskState.Name(task.status.state)}"
                          + (f": {why}" if why else ""))  # fmt: skip
    texts = [t for t in (get_artifact_text(a) for a in task.artifacts) if t]
    if not texts and task.status.HasField("message"):
        texts = [get_message_text(task.status.message)]
    return "\n".join(texts)
