"""The run's external agents (``NODE_ID=TOOL@a2a+http://...``): for each, a counting tap in front
of its address, its protocol's own SDK client in text mode (``protocols/<p>/text.py``) and the
translation between packets and text (``text.py``, pure). This module only moves bytes and owns
its tasks: a packet the core sends such an agent is rendered, asked, and its answer comes back
to the core as the agent's frame, encoded as the team's own agents encode theirs.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit, urlunsplit

import httpx

from ...errors import ConnectError, FrameError
from ...settings import AgentSpec, ExternalAgent, Settings
from ..frames import Announcement, DocInitPacket, Packet
from ..native.tap import Tap
from ..protocols import ProtocolAdapter, get_adapter
from ..protocols.native import TextClient, Undelivered
from ..wireend import WireLayers
from .text import STANDS_IN, failure, render, reply

log = logging.getLogger(__name__)
Answer = Callable[[str, bytes], None]  # node id, one frame of its answer (the relay's Wire.frame)


def _client(
    external: ExternalAgent, through: str, http: httpx.AsyncClient, run_id: str, host: str
) -> TextClient:
    """The protocol's text client (its SDK is imported only by runs that have such an agent)."""
    if external.protocol == "a2a":
        from ..protocols.a2a.text import A2ATextClient

        return A2ATextClient(external.url, through, http, run_id)
    from ..protocols.mcp.text import McpTextClient

    return McpTextClient(external.url, through, http, external.tool, host)


async def _opened(
    spec: AgentSpec,
    external: ExternalAgent,
    through: str,
    http: httpx.AsyncClient,
    run_id: str,
    deadline: float,
) -> TextClient:
    """The agent's client, its first requests made, trying again while the agent starts until
    ``deadline``; a :class:`ConnectError` with the last reason after it."""
    host = urlsplit(external.url).netloc
    while True:
        client = _client(external, through, http, run_id, host)
        try:
            await client.connect()
            return client
        except Undelivered as exc:
            last = str(exc)
            await client.aclose()
        if time.monotonic() >= deadline:
            raise ConnectError(
                f"external agent {spec.node_id} ({spec.tool}) at {external.url} not usable: {last}"
            )
        await asyncio.sleep(0.25)  # retry back-off while the agent starts


class ExternalPeers:
    """Every external agent of one run: reached at the start, asked for each packet it works on."""

    def __init__(
        self, settings: Settings, run_id: str, inner: str, announced: Mapping[str, Announcement]
    ) -> None:
        self.settings = settings
        self.run_id = run_id
        self.inner = inner  # the adapter the core speaks: the agent's frames are encoded with it
        self.announced = dict(announced)  # node id -> what it stands in for (agents/teams.py made it)
        self.taps: dict[str, Tap] = {}
        self.clients: dict[str, TextClient] = {}
        self.adapters: dict[str, ProtocolAdapter] = {}
        self.protocols: dict[str, str] = {}  # node id -> its protocol (the answer's method)
        self.docs: dict[str, DocInitPacket] = {}  # the run's document, for an agent that reads it
        self.undelivered = 0  # questions the agent's protocol client gave up on
        self._https: list[httpx.AsyncClient] = []
        self._seq: dict[str, int] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._answer: Answer | None = None

    def has(self, node_id: str) -> bool:
        return node_id in self.announced

    def connected(self, node_id: str) -> bool:
        return node_id in self.clients

    async def reach(self, spec: AgentSpec, deadline: float) -> Announcement:
        """Put a tap in front of the agent and open its protocol's client (its first request),
        trying again while it starts, until ``deadline``."""
        external, said = spec.external, self.announced.get(spec.node_id)
        if external is None or said is None:
            raise ConnectError(f"agent {spec.node_id} is not an external agent of this run")
        try:  # its packets are encoded as the team's own agents encode theirs (keyed: with its node's key)
            self.adapters[spec.node_id] = get_adapter(self.inner, spec.announces, self.settings.keys_dir,
                                                      self.settings.replay_window_s)  # fmt: skip
        except FrameError as exc:  # a keyed protocol with no key made for its node id
            raise ConnectError(f"external agent {spec.node_id} ({spec.tool}): {exc}") from exc
        tap = self.taps[spec.node_id] = Tap(spec.host, spec.port)
        await tap.start()
        parts = urlsplit(external.url)
        through = urlunsplit(("http", f"127.0.0.1:{tap.port}", parts.path, parts.query, ""))
        # Its own client, naming the agent's own address in Host: the tap is the relay's business.
        http = httpx.AsyncClient(timeout=httpx.Timeout(10.0, read=self.settings.run_timeout),
                                 headers={"Host": parts.netloc}, trust_env=False)  # fmt: skip
        self._https.append(http)
        self.clients[spec.node_id] = await _opened(spec, external, through, http, self.run_id, deadline)
        self.protocols[spec.node_id] = external.protocol
        return said

    def serve(self, answer: Answer) -> None:
        self._answer = answer

    def send(self, node_id: str, blobs: list[bytes]) -> None:
        """Each packet the agent works on goes to it as text, now, without waiting; ``doc_init``
        is kept for an agent that reads it; others it would ignore, as the team's agents do."""
        adapter, said = self.adapters[node_id], self.announced[node_id]
        for blob in blobs:
            try:
                packet = adapter.decode_packet(blob)
            except FrameError as exc:  # the core encoded it: the agent could not read it either
                log.warning("external agent %s: a frame it cannot read: %s", node_id, exc)
                continue
            if isinstance(packet, DocInitPacket):
                self.docs[node_id] = packet
            elif packet.type in STANDS_IN and packet.type.value in said.consumes:
                task = asyncio.get_running_loop().create_task(self._ask(node_id, packet))
                self._tasks.add(task)  # owned here; close() cancels what is still in flight
                task.add_done_callback(self._tasks.discard)

    async def _ask(self, node_id: str, packet: Packet) -> None:
        src = self.announced[node_id].node_id  # what the agent stamps on its packets
        self._seq[node_id] = seq = self._seq.get(node_id, 0) + 1
        doc = self.docs.get(node_id)
        try:
            text = await self.clients[node_id].ask(render(packet, doc.payload if doc else None))
            made = reply(packet, text, src, seq, self.protocols[node_id])
        except Undelivered as exc:
            # The stage failed, in the run's words: the pipeline's stage ends the run
            # (agent_error, with the protocol client's reason), a worker's sub-task comes back FAILED.
            self.undelivered += 1
            made = failure(packet, str(exc), src, seq)
        if self._answer is not None:
            self._answer(node_id, self.adapters[node_id].encode(made.to_dict()))

    def layers(self) -> WireLayers | None:
        """The external agents' wire, as their taps counted it (None: the run has none)."""
        if not self.taps:
            return None
        total = WireLayers()
        for tap in self.taps.values():
            tap.read_open()
            total = total + tap.books.totals()
        return total.model_copy(update={"undelivered": self.undelivered})

    async def close(self) -> None:
        """Stop the questions still in flight, close the clients, then the taps (their counts stay)."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await asyncio.gather(*(c.aclose() for c in self.clients.values()), return_exceptions=True)
        for tap in self.taps.values():
            tap.read_open()
        await asyncio.gather(*(h.aclose() for h in self._https), return_exceptions=True)
        await asyncio.gather(*(t.close() for t in self.taps.values()), return_exceptions=True)
