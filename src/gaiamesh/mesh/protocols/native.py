"""A protocol on its own wire (``TRANSPORT=native``): what a binding gives an agent's server and
the relay's client, and what each of them must do.

With ``TRANSPORT=relay`` every protocol's frame rides the relay's WebSocket. With ``native``,
the relay is the protocol's gateway: for each frame the core sends to an agent it makes one
request with the protocol's own client (an A2A ``message/send``, an ACP ``POST /runs``, an MCP
``tools/call``, ...), through a counting tap (``tap.py``), to the agent's server for that
protocol; the agent answers with the frames it emitted while handling it. So the relay is one
end of every connection, sees every byte, and the core decides as it always has.

A binding carries *blobs*: the packet encoded by the adapter named ``inner`` (``json`` for the
SDK bindings, which put the packet's canonical JSON in the protocol's own part; the protocol
itself for plain HTTP, whose body is the protocol's frame). The envelope around the blob and
the HTTP around that are counted at the socket, not modelled.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import httpx
from starlette.types import ASGIApp

from ...errors import RunError
from ...settings import Settings
from ..frames import packet_schema

# Where the relay asks an agent to prove the run's mesh token before it uses the agent's native
# endpoints (both ends: the relay's gateway and the agent's native server).
HELLO = "/gaiamesh/hello"


class Undelivered(RunError):
    """The protocol's client gave up on a frame (after whatever retries its SDK or its documented
    settings make): the frame is lost, and the message says what the client saw."""


class AgentEndpoint(Protocol):
    """What an agent hands a binding's server: who it is, and how it answers one frame."""

    @property
    def node_id(self) -> str: ...

    @property
    def tool(self) -> str:
        """The tool's name: the MCP tool's, the A2A skill's id, the ACP agent's name."""

    @property
    def description(self) -> str:
        """What the tool does, in a sentence (a card's, a tool's, an agent's description)."""

    @property
    def consumes(self) -> frozenset[str]:
        """The packet types it works on (the relay routes by them)."""

    @property
    def reads(self) -> frozenset[str]:
        """The packet types it only reads (it takes them and answers none)."""

    @property
    def emits(self) -> frozenset[str]:
        """The packet types the frames of its answers may have."""

    @property
    def answers_text(self) -> bool:
        """Whether its tool gives a plain text request a meaning (:meth:`answer_text`)."""

    @property
    def replay_window_s(self) -> float:
        """How long a signed request stays fresh (``REPLAY_WINDOW_S``; 0: not checked)."""

    @property
    def acp_store(self) -> str:
        """The store of an ACP server's runs (``ACP_STORE``: ``keyed`` or ``memory``, acp/store.py)."""

    async def answer_text(self, query: str, document: str | None) -> list[str]:
        """The tool's answer to a plain text request, as texts: ``query`` about ``document``, or,
        when None, about the document of the newest run the agent holds. Raises
        :class:`~gaiamesh.errors.Unanswerable` saying what to send when it cannot answer (no
        document, an empty query, a tool that takes packets only); writes nothing on disk."""

    def answer(self, blob: bytes, inner: str) -> AsyncIterator[bytes]:
        """Decode ``blob`` with the adapter ``inner``, handle the packet, and yield each frame
        (encoded with the same adapter) the agent emits while handling it, as soon as it is
        emitted: none for a packet it only reads or a sub-task's result it was waiting for.
        Raises :class:`~gaiamesh.errors.FrameError` before yielding for a blob it cannot
        decode (the binding answers with its protocol's own error)."""


# --- what an agent says of itself, the same in every binding's card, tool or manifest ---------
def takes(agent: AgentEndpoint) -> list[str]:
    """Every packet type the agent takes: those it works on and those it only reads."""
    return sorted(agent.consumes | agent.reads)


def packets(agent: AgentEndpoint) -> dict[str, Any]:
    """The agent's packets for a client written elsewhere: the types it works on, reads and
    emits, and the JSON schemas (from the packet models) of a packet it takes and of one it
    emits. An A2A card's extension and an ACP manifest carry it whole; an MCP tool its parts."""
    return {
        "consumes": sorted(agent.consumes),
        "reads": sorted(agent.reads),
        "emits": sorted(agent.emits),
        "takes_schema": packet_schema(takes(agent)),
        "emits_schema": packet_schema(agent.emits),
    }


def about(agent: AgentEndpoint, where: str) -> str:
    """What the agent does and what to send it, for a card's, a tool's or a manifest's
    description; ``where``: where that protocol's document carries the packets' schemas."""
    said = (
        f"{agent.description.rstrip('.')}: Gaia Mesh's {agent.tool} agent (node {agent.node_id}). "
        f"It takes one packet as JSON, of type {' or '.join(takes(agent))}, and answers with packets "
        f"of type {', '.join(sorted(agent.emits))}; their JSON schemas are in {where}."
    )
    if agent.answers_text:
        said += (
            " It also answers plain text: a query, after the document it is about (without one, the "
            "document of the newest run it holds), answered with passages of text."
        )
    return said


def text_refused(agent: AgentEndpoint, where: str) -> str:
    """A text request to an agent whose tool takes packets only: what to send instead."""
    return (
        f"the {agent.tool} tool takes packets, not text: send one packet of type "
        f"{' or '.join(takes(agent))} as JSON (its JSON schema is in {where})"
    )


def text_request(texts: list[str]) -> tuple[str, str | None]:
    """A text request's query and document from its texts in order: the last is the query, the
    ones before it (if any) the document; none: the document of a run the agent holds."""
    if not texts:
        return "", None
    *document, query = texts
    return query, ("\n\n".join(document) if document else None)


class NativeClient(abc.ABC):
    """The relay's client of one agent under one protocol (made by :meth:`Binding.client`)."""

    async def connect(self) -> None:  # noqa: B027 (optional: a protocol with no first request)
        """The protocol's first request, if it has one: the agent card, an MCP session's
        initialize, an ACP agent's manifest, a DID document. Its cost is the first request's."""

    @abc.abstractmethod
    def send(self, blob: bytes) -> AsyncIterator[bytes]:
        """Send one frame; yield each frame of the agent's answer as it arrives. Raises
        :class:`Undelivered` when the protocol's client gives up on it."""

    async def aclose(self) -> None:
        """Close what the client holds (a session, its streams)."""
        return None


class TextClient(abc.ABC):
    """The relay's client of an agent someone else wrote, in its protocol's plain semantics:
    text in, text out (``mesh/external/``). ``url``: the agent's address, as AGENTS names it;
    ``through``: the same address with the relay's counting tap in its place."""

    @abc.abstractmethod
    async def connect(self) -> None:
        """The protocol's first request (the agent card, an MCP session and its tool list);
        raises :class:`Undelivered` when the agent cannot be used."""

    @abc.abstractmethod
    async def ask(self, text: str) -> str:
        """Send ``text``; return the text of the answer. Raises :class:`Undelivered`."""

    async def aclose(self) -> None:  # noqa: B027 (optional: a protocol with nothing to close)
        """Close what the client holds open (the run's HTTP client is the caller's)."""


@dataclass(frozen=True)
class Peer:
    """Where the relay's client reaches one agent (``base_url``, through the tap) and who the
    two ends are, for protocols that name them (ANP's DIDs, A2A's context)."""

    base_url: str  # http://127.0.0.1:<tap port><binding.mount>, no trailing slash
    node_id: str  # the agent's
    run_id: str
    keys_dir: Path
    # The agent's own address as AGENTS names it (not through the tap), for a URL the agent
    # itself must reach (Agora's protocol document, which the agent serves and fetches).
    direct_url: str = ""


class Binding(abc.ABC):
    """One protocol on its own wire: the agent's server and the relay's client."""

    name: str  # the protocol's name (PROTOCOL)
    inner: str = "json"  # the adapter that encodes the packet inside the protocol's body
    streams: bool = False  # an agent's frames can leave before its handling ends (sub-tasks need it)
    mount: str  # the path under the agent's native port where it serves this protocol, e.g. "/a2a"

    @abc.abstractmethod
    def app(self, agent: AgentEndpoint, keys_dir: Path) -> ASGIApp:
        """The agent's server for this protocol, mounted at :attr:`mount` (paths in it are
        relative to that). The agent's server refuses a body over ``MAX_FRAME_BYTES`` before it
        reaches the app; everything else the app refuses with its protocol's own error."""

    @abc.abstractmethod
    def client(self, peer: Peer, http: httpx.AsyncClient, stream: bool = False) -> NativeClient:
        """The relay's client of ``peer``; ``http`` is the relay's HTTP client of that agent for
        the run, which a binding whose SDK takes an ``httpx.AsyncClient`` must use (its pool is
        a harness setting, recorded with the run). ``stream``: use the protocol's streaming method, so that
        the agent's frames arrive while it works (the orchestrated strategy's sub-tasks need it;
        only asked of a binding whose :attr:`streams` is true)."""

    def hosted(self, settings: Settings) -> AbstractAsyncContextManager[Path]:
        """What the relay serves for this protocol while a run uses it, before any agent is
        reached (ANP: the DID host where the agents resolve the relay's DID), as a context whose
        value is the keys folder the relay's clients read. By default nothing, and ``KEYS_DIR``."""
        return contextlib.nullcontext(Path(settings.keys_dir))
