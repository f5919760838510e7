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
from typing import Protocol

import httpx
from starlette.types import ASGIApp

from ...errors import RunError
from ...settings import Settings

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
    def replay_window_s(self) -> float:
        """How long a signed request stays fresh (``REPLAY_WINDOW_S``; 0: not checked)."""

    def answer(self, blob: bytes, inner: str) -> AsyncIterator[bytes]:
        """Decode ``blob`` with the adapter ``inner``, handle the packet, and yield each frame
        (encoded with the same adapter) the agent emits while handling it, as soon as it is
        emitted: none for a packet it only reads or a sub-task's result it was waiting for.
        Raises :class:`~gaiamesh.errors.FrameError` before yielding for a blob it cannot
        decode (the binding answers with its protocol's own error)."""


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
