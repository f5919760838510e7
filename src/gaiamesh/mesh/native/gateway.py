"""The relay's side of a native run: for each agent, a counting tap in front of its native port,
the hello that admits it, and the protocol's own client on an HTTP client of that agent's own
(its pool: ``pool.py``).

The relay hands every frame the core sends to :meth:`Gateway.post`; each becomes one request of
the protocol's client, whose answer's frames come back to the relay as the agent's. Nothing here
retries: recovery is the protocol client's (its SDK's, or its documented settings'), and a frame
it gives up on is reported lost.
"""

from __future__ import annotations

import asyncio
import math
import statistics
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path

import httpx

from ...errors import ConnectError, ForeignAgent
from ...settings import AgentSpec, Settings
from .. import admission
from ..connect import admitted
from ..faults import FaultPlan
from ..frames import Announcement
from ..protocols.native import HELLO, NativeClient, Peer, Undelivered
from ..wireend import WireLayers
from . import SUBTASKING, binding, check, pool
from .tap import Tap
from .tapfaults import TapFaults

DRAIN_S = 2.0  # how long the run's end waits for frames in flight
OnFrame = Callable[[str, bytes], None]  # node id, one frame of its answer
OnLost = Callable[[str, str], None]  # node id, what the protocol's client saw


class Gateway:
    """One run's native wire, relay side."""

    def __init__(self, settings: Settings, run_id: str, faults: FaultPlan | None = None, peers: int = 1) -> None:
        self.settings = settings
        self.run_id = run_id
        self.binding = binding(check(settings.protocol, settings.strategy))
        # Sub-tasks need the agents' frames while they work: the protocol's streaming method.
        self.stream = settings.strategy in SUBTASKING
        # One HTTP client per agent, whose pool keeps every connection for the run, sized to the
        # team (pool.py, recorded in metrics.json's layers); this one says hello to each.
        self.peers = peers
        self.pool = pool.limits(settings, peers)
        self.http = pool.client(settings, peers)
        self._clients_http: dict[str, httpx.AsyncClient] = {}
        self.taps: dict[str, Tap] = {}
        self.faults: FaultPlan | None = faults if faults is not None and faults.active else None  # FAULT_*, at the taps
        self.origin = time.monotonic()  # the run's t=0 (the relay sets its own), for the faults' windows
        self.clients: dict[str, NativeClient] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._hosting = AsyncExitStack()  # what the binding serves while the run lasts (Binding.hosted)
        self._keys = Path(settings.keys_dir)  # the keys the clients read (a DID host: with its published DID)
        self._first: list[tuple[float, str, int, int]] = []  # each agent's first request: ms, node, requests before and after
        self._sent: dict[str, _Sent] = {}  # the requests each agent's client has sent
        self._acks: list[float] = []  # round trips of frames answered with no frame, ms
        self._undelivered = 0  # frames the protocol's client gave up on

    async def start(self) -> None:
        """What the relay serves for the protocol before any agent is reached: the binding's own
        (:meth:`Binding.hosted`: a DID host, say)."""
        self._keys = await self._hosting.enter_async_context(self.binding.hosted(self.settings))

    async def connect(self, spec: AgentSpec, deadline: float) -> Announcement | None:
        """Put a tap in front of the agent, admit it (the hello) and open the protocol's client
        (its first request), trying again while the agent starts, until ``deadline``."""
        port = spec.port + self.settings.native_port_offset
        # The hello is the harness's, not the protocol's: it goes to the agent, not through the tap.
        said = await self._hello(spec, f"http://{spec.host}:{port}", deadline)
        tap = self.taps.get(spec.node_id)
        if tap is None:
            faults = TapFaults(self.faults, spec.node_id) if self.faults else None
            tap = self.taps[spec.node_id] = Tap(spec.host, port, faults, self.origin)
            await tap.start()
        peer = Peer(f"http://127.0.0.1:{tap.port}{self.binding.mount}", spec.announces, self.run_id, self._keys,
                    f"http://{spec.host}:{port}{self.binding.mount}")  # fmt: skip
        http = self._clients_http.get(spec.node_id)
        if http is None:
            http = self._clients_http[spec.node_id] = pool.client(self.settings, self.peers)
            http.event_hooks = {"request": [sent := _Sent()], "response": []}
            self._sent[spec.node_id] = sent
        client = self.binding.client(peer, http, stream=self.stream)
        sent, started = self._sent[spec.node_id], time.perf_counter()
        before = sent.requests
        try:
            await client.connect()
            # Its bytes are read at the run's end (layers()), when the tap has carried all of them:
            # a response the client did not wait for (MCP's 202 to its notice) may still be on
            # its way now. Which requests were the first's, the client says: those sent so far.
            self._first.append(((time.perf_counter() - started) * 1000, spec.node_id, before, sent.requests))
        except Undelivered as exc:
            raise ConnectError(
                f"agent {spec.node_id} ({spec.tool}): {self.settings.protocol} refused: {exc}"
            ) from exc
        self.clients[spec.node_id] = client
        return said

    async def _hello(self, spec: AgentSpec, base: str, deadline: float) -> Announcement | None:
        where = f"{spec.host}:{spec.port + self.settings.native_port_offset} (native)"
        last: Exception | str | None = None
        while time.monotonic() < deadline:
            asked = admission.relay_headers(self.settings.mesh_token)
            try:
                answer = await self.http.get(
                    f"{base}{HELLO}", headers={**asked, admission.HEADER_RUN: self.run_id}, timeout=2.0
                )
            except httpx.HTTPError as exc:
                last = exc
            else:
                if answer.status_code == 403 and self.settings.mesh_token:
                    raise ForeignAgent(f"what answers at {where} refused this run's mesh token")
                if answer.status_code == 200:
                    return admitted(spec, self.settings, asked, answer.headers, where, HELLO)
                last = f"HTTP {answer.status_code}"
            await asyncio.sleep(0.25)  # retry back-off while the agent starts
        raise ConnectError(
            f"agent {spec.node_id} ({spec.tool}) not reachable at {where} after "
            f"{self.settings.connect_timeout:.0f}s: {last!r}"
        )

    def post(self, node_id: str, blob: bytes, on_frame: OnFrame, on_lost: OnLost) -> None:
        """Send ``blob`` to the agent now, without waiting: each frame of its answer goes to
        ``on_frame`` as it arrives; a frame the client gives up on goes to ``on_lost``."""
        client = self.clients.get(node_id)
        if client is None:
            on_lost(node_id, "no client: the agent was never reached")
            return
        task = asyncio.get_running_loop().create_task(self._deliver(client, node_id, blob, on_frame, on_lost))
        self._tasks.add(task)  # owned here; aclose() cancels what is still in flight
        task.add_done_callback(self._tasks.discard)

    async def _deliver(
        self, client: NativeClient, node_id: str, blob: bytes, on_frame: OnFrame, on_lost: OnLost
    ) -> None:
        started, frames = time.perf_counter(), 0
        try:
            async for frame in client.send(blob):
                frames += 1
                on_frame(node_id, frame)
        except Undelivered as exc:
            self._undelivered += 1
            on_lost(node_id, str(exc))
            return
        if frames == 0:
            self._acks.append((time.perf_counter() - started) * 1000)

    def layers(self) -> WireLayers:
        total = WireLayers()
        for tap in self.taps.values():
            tap.read_open()
            total = total + tap.books.totals()
        firsts = [(ms, self._first_bytes(node, before, after)) for ms, node, before, after in self._first]
        return total.model_copy(update={"undelivered": self._undelivered,
            "first_request_ms": round(statistics.median(f[0] for f in firsts), 3) if firsts else None,
            "first_request_bytes": int(statistics.median(f[1] for f in firsts)) if firsts else None,
            "ack_ms_p50": _nearest_rank(self._acks, 0.50), "ack_ms_p99": _nearest_rank(self._acks, 0.99),
            "keep_alive_s": self.pool.keepalive_expiry, "pool_connections": self.pool.max_connections,
            "acp_store": self.settings.acp_store if self.binding.name == "acp" else None,
        })  # fmt: skip

    def _first_bytes(self, node_id: str, before: int, after: int) -> int:
        """The bytes of the exchanges the client's first request made: the tap numbers every
        request it carried, and requests are the client's, sent in order."""
        books = self.taps[node_id].books
        return books.first_bytes(after) - books.first_bytes(before)

    async def aclose(self) -> None:
        """Let the frames in flight arrive (at most ``DRAIN_S``: the copies of the final answer
        were counted as sent, so they are sent), stop the rest, close the clients, then the taps
        (their counts stay)."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=DRAIN_S)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await asyncio.gather(*(c.aclose() for c in self.clients.values()), return_exceptions=True)
        for tap in self.taps.values():
            tap.read_open()  # the kernel's counts, before the connections close
        await asyncio.gather(*(h.aclose() for h in [self.http, *self._clients_http.values()]), return_exceptions=True)
        await self._hosting.aclose()
        await asyncio.gather(*(t.close() for t in self.taps.values()), return_exceptions=True)


class _Sent:
    """An httpx request hook: how many requests a client has sent (redirects included)."""

    def __init__(self) -> None:
        self.requests = 0

    async def __call__(self, request: httpx.Request) -> None:
        self.requests += 1


def _nearest_rank(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[max(0, math.ceil(q * len(ordered)) - 1)], 3)
