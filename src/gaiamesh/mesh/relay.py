"""``MeshNetwork``: the asyncio transport around :class:`~gaiamesh.mesh.core.RelayCore`.

It connects to every agent, learns what each consumes from its handshake, hands every event
(the document at t=0, each frame, each lost connection, the timeout) to the core with the
time it happened, and carries out the outcomes once per pass of the event loop: the frame
records go to ``frames.jsonl`` first, then the bytes go out, one socket write per agent.
Sends never wait on an agent (they go to its connection's buffer), so one slow agent does
not stall the others. While the run goes on it looks AGENTS' ``dns:`` names up again every
``DISCOVERY_INTERVAL`` seconds, connects to replicas that appeared and lets go of lost ones
whose address left (``discovery.reconcile`` decides, the core counts). At the end it gathers the
agents' workspaces and hands what it saw to the run's one finishing step (``evaluation/outcome.py``).
"""

from __future__ import annotations

import asyncio
import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed, InvalidURI

from ..errors import ConfigError, ConnectError, StorageError, run_status
from ..evaluation.metrics import FrameLog, RunMetrics, ScoringChoice, Totals
from ..evaluation.outcome import Announced, Ending, WireEnd, finish_run
from ..settings import AgentSpec, Settings
from ..tasks import Task
from . import collect, discovery
from .connect import connect_agent, relay_tls, write_frames
from .core import RelayCore
from .discovery import Lineup, Resolver
from .faults import network_faults
from .frames import Announcement
from .native.gateway import Gateway
from .outcome import AgentStatus, Observer, Outcome, RunEnd, Team, describe
from .protocols import get_adapter

Reporter = Callable[[str], None]


REJOIN_ATTEMPT_S = 2.0  # one round of connection attempts to a lost agent (repeated until the run ends)


class MeshNetwork:
    """Star-topology relay and metrics collector for one run."""

    def __init__(
        self,
        settings: Settings,
        task: Task,
        out_dir: Path,
        reporter: Reporter | None = None,
        run_id: str | None = None,
        quiet: bool = False,
        observer: Observer | None = None,
        resolve: Resolver = discovery.resolve_ipv4,
        share_start: int = 0,
        *,
        lineup: Lineup,  # whom the run may use: its strategy's agents of AGENTS (agents.teams.lineup)
    ) -> None:
        self.settings = settings
        self.share_start = share_start  # where `share` starts its turns (the service: runs so far)
        self.task = task
        self.out_dir = Path(out_dir)
        self.report: Reporter = reporter or (lambda line: print(line, flush=True))
        self.quiet = quiet  # no progress lines at all (benchmarks, batches)
        self.observer = observer  # the service's live event stream
        self.resolve = resolve  # the addresses of AGENTS' dns: entries (tests pass their own)
        self.run_id = run_id or uuid.uuid4().hex[:16]
        # TRANSPORT=native: each frame is a request of the protocol's own client (mesh/native/);
        # the core then speaks the adapter that encodes the packet inside the protocol's body.
        self.gateway = Gateway(settings, self.run_id) if settings.transport == "native" else None
        inner = self.gateway.binding.inner if self.gateway else settings.protocol
        self.adapter = get_adapter(inner, "network", settings.keys_dir, settings.replay_window_s)
        self.lineup = lineup
        self.specs: list[AgentSpec] = list(lineup.agents)
        if not self.specs:
            raise ConfigError(f"no agents of the {settings.strategy} strategy in AGENTS ({settings.agents!r})")
        self.conns: dict[str, ClientConnection] = {}
        self.heard: dict[str, Announcement] = {}  # node -> what it announced (its model: metrics.json)
        self.core: RelayCore | None = None
        self.framelog: FrameLog | None = None
        self._done = asyncio.Event()
        self._pending: list[Outcome] = []
        self._closing = False
        self._wall0 = time.monotonic()
        self._lost: dict[str, str] = {}  # node id -> why it left (the live view greys it out)
        self._left: dict[str, str] = {}  # replicas let go (address gone from DNS) -> why
        self._joining: dict[str, asyncio.Task[None]] = {}  # replicas found by DNS, being connected
        self._refused: set[str] = set()  # replicas found by DNS that would not join (said once)
        self._discovery: asyncio.Task[None] | None = None
        self._readers: dict[str, asyncio.Task[None]] = {}
        self._timers: list[asyncio.TimerHandle] = []
        self.storage_error: str | None = None  # the frame log could not be written: the run ends
        self.reached: set[str] = set()  # native: the agents admitted and whose client is open
        # What ended the run while connecting, with its parts (``reason``, ``hint``): the caller
        # that holds the network reads them; metrics.json has the whole message.
        self.connect_error: ConnectError | None = None

    # --- connecting ------------------------------------------------------------------------
    async def _connect(self, core: RelayCore) -> None:
        deadline = time.monotonic() + self.settings.connect_timeout
        if self.gateway is not None:
            await self.gateway.start()
        results = await asyncio.gather(*(self._reach(s, deadline) for s in self.specs), return_exceptions=True)
        failures = [r for r in results if isinstance(r, Exception)]
        for spec, result in zip(self.specs, results, strict=True):
            if not isinstance(result, BaseException):
                said = result
                self.heard.update({spec.node_id: said} if said else {})
                core.register(spec.node_id, said.consumes if said else None, said.reads if said else frozenset())
        self._show_team()
        if failures:
            await self._close_all()
            first = failures[0]
            if isinstance(first, InvalidURI):
                raise ConnectError(f"bad agent address: {first}") from first
            raise first
        self.report(
            f"relay: connected to {len(self.conns) + len(self.reached)} agents "
            f"({', '.join(f'{s.node_id}={s.tool}' for s in self.specs)}), "
            f"routing {core.router.mode.value}, protocol {self.settings.protocol}"
            + (" on its own wire" if self.gateway else "")
        )
        for tool, made in sorted(announced(self.heard).scoring.items()):
            self.report(f"relay: {tool} chooses answers by {made.choice} ({made.why})")

    async def _reach(self, spec: AgentSpec, deadline: float) -> Announcement | None:
        """Connect to one agent: its WebSocket, or (native) its tap, hello and protocol client."""
        if self.gateway is not None:
            said = await self.gateway.connect(spec, deadline)
            self.reached.add(spec.node_id)
            return said
        ws, said = await connect_agent(spec, self.settings, deadline)
        self.conns[spec.node_id] = ws
        return said

    async def _close_all(self) -> None:
        self._closing = True
        for task in [self._discovery, *self._joining.values()]:
            if task is not None:
                task.cancel()  # no look-up or new replica after the end
        for node_id in self._lost:  # their readers are waiting for the agent to come back
            if (reader := self._readers.get(node_id)) is not None:
                reader.cancel()
        await asyncio.gather(*(ws.close() for ws in self.conns.values()), return_exceptions=True)
        if self.gateway is not None:
            await self.gateway.aclose()

    # --- moving bytes ----------------------------------------------------------------------
    def _apply(self, outcome: Outcome) -> None:
        """Queue the core's decision; it is carried out when this pass of the event loop ends,
        together with every other frame read in the same pass."""
        self._pending.append(outcome)
        loop = asyncio.get_running_loop()
        if len(self._pending) == 1:
            loop.call_soon(self._flush)
        if outcome.wake_at is not None and self.core is not None:
            core = self.core  # a grace runs out then: the core decides whether the run ends
            self._timers.append(loop.call_at(outcome.wake_at, lambda: self._apply(core.tick(time.monotonic()))))

    def _flush(self) -> None:
        """Carry out the queued decisions: the frame log first (one write), then the bytes (one
        socket write per agent), then the progress lines. Writing the log before the frames
        leave means a killed relay's log still holds every frame it accepted."""
        outcomes, self._pending = self._pending, []
        if not outcomes:
            return
        assert self.framelog is not None
        try:
            if self.storage_error is None:
                self.framelog.write([r for o in outcomes for r in o.records])
        except OSError as exc:
            self.storage_error = f"cannot write the frame log {self.framelog.path}: {exc}"
        if self.storage_error is not None:
            # Write-ahead: frames the log could not take are never sent, and the run ends here.
            if self.core is not None:
                self.core.fail(run_status(StorageError(self.storage_error)), self.storage_error, time.monotonic())
            if self.observer is not None:
                self.observer(f"run ends: storage_error ({self.storage_error})")
            self._done.set()
            return
        outgoing: dict[str, list[bytes]] = {}
        for outcome in outcomes:
            for send in outcome.sends:
                for node_id in send.dst:
                    outgoing.setdefault(node_id, []).append(send.blob)
        for node_id, blobs in outgoing.items():
            if self.gateway is not None:
                for blob in blobs:
                    self.gateway.post(node_id, blob, self._native_frame, self._native_lost)
            elif (ws := self.conns.get(node_id)) is not None:
                write_frames(ws, blobs)
        if self.observer is not None:
            for outcome in outcomes:
                for record in outcome.records:
                    self.observer(record)
                for note in outcome.notes:
                    self.observer(note)
        for outcome in outcomes:
            if not self.quiet:
                for record in outcome.records:
                    self.report(describe(record))
                for note in outcome.notes:
                    self.report(note)
            if outcome.end is not None:
                self._done.set()

    def _native_frame(self, node_id: str, blob: bytes) -> None:
        if self.core is not None:
            self._apply(self.core.receive(node_id, blob, time.monotonic()))

    def _native_lost(self, node_id: str, why: str) -> None:
        # Recovery is the protocol client's: a frame it gave up on ends the run, named.
        if self.core is not None and self.core.end is None and not self._closing:
            self._apply(self.core.fail("frame_lost", f"{self.settings.protocol} gave up on a frame to agent "
                                       f"{node_id}: {why}", time.monotonic()))  # fmt: skip

    async def _reader(self, core: RelayCore, node_id: str, ws: ClientConnection) -> None:
        """Carry one agent's frames for the whole run. When its connection drops, the agent is
        reported lost and the relay keeps trying to reach it: a restarted agent rejoins the run
        and gets traffic again (``_close_all`` cancels the trying when the run ends)."""
        spec = next(s for s in self.specs if s.node_id == node_id)
        while True:
            reason = "connection closed"
            try:
                async for message in ws:
                    blob = message.encode() if isinstance(message, str) else message
                    self._apply(core.receive(node_id, blob, time.monotonic()))
            except ConnectionClosed as exc:
                reason = f"connection closed ({exc.rcvd.code if exc.rcvd else 'no close frame'})"
            if self._closing:
                return
            self.conns.pop(node_id, None)
            self._lost[node_id] = reason
            self._apply(core.lost(node_id, reason, time.monotonic()))
            self._show_team()
            if core.end is not None:
                return
            ws, said = await self._reach_again(spec)
            self.conns[node_id] = ws
            del self._lost[node_id]
            consumes, reads = (said.consumes, said.reads) if said else (None, frozenset[str]())
            self._apply(core.rejoin(node_id, time.monotonic(), consumes, reads))
            self._show_team()

    async def _reach_again(self, spec: AgentSpec) -> tuple[ClientConnection, Announcement | None]:
        """Connect to a lost agent as soon as it answers again (until cancelled)."""
        while True:
            try:
                return await connect_agent(spec, self.settings, time.monotonic() + REJOIN_ATTEMPT_S)
            except ConnectError:
                continue  # connect_agent waited between its attempts; the agent is not back yet

    # --- replicas found or gone while the run goes on (dns: entries, DISCOVERY_INTERVAL) -------
    async def _rediscover(self, core: RelayCore, entries: list[AgentSpec], tasks: asyncio.TaskGroup) -> None:
        """Look the ``dns:`` names up again until the run ends (``_close_all`` cancels this):
        new replicas are connected and join the run, lost ones whose address left are let go
        (:func:`~gaiamesh.mesh.discovery.reconcile` decides)."""
        while core.end is None:
            # Polling: DNS gives no signal when a replica registers or leaves.
            await asyncio.sleep(self.settings.discovery_interval)
            addresses = await discovery.resolve_all(entries, self.resolve)
            if core.end is not None or self._closing:
                return
            active = {s.node_id for s in self.specs if s.node_id not in self._left} | set(self._joining)
            change = discovery.reconcile(entries, addresses, {s.node_id: s for s in self.specs}, active, set(self._lost))
            for node_id in change.left:
                self._let_go(core, node_id)
            for spec in change.joined:
                self._joining[spec.node_id] = tasks.create_task(self._join(core, spec, tasks), name=f"join-{spec.node_id}")

    async def _join(self, core: RelayCore, spec: AgentSpec, tasks: asyncio.TaskGroup) -> None:
        """Connect to a replica DNS just gave, and add it to the run with a reader of its own."""
        try:
            ws, said = await connect_agent(spec, self.settings, time.monotonic() + REJOIN_ATTEMPT_S)
        except ConnectError as exc:
            if spec.node_id not in self._refused and not self.quiet:
                self.report(f"relay: replica {spec.node_id} found by DNS did not join (tried again while "
                            f"its address is in DNS): {exc}")  # fmt: skip
            self._refused.add(spec.node_id)
            return  # the next look-up tries again
        finally:
            self._joining.pop(spec.node_id, None)
        if self._closing or core.end is not None:
            await ws.close()  # connected as the run ended: not part of it
            return
        self.conns[spec.node_id] = ws
        self._left.pop(spec.node_id, None)
        if all(s.node_id != spec.node_id for s in self.specs):
            self.specs.append(spec)
        self.heard.update({spec.node_id: said} if said else {})
        consumes, reads = (said.consumes, said.reads) if said else (None, frozenset[str]())
        self._apply(core.join(spec.node_id, spec.tool, time.monotonic(), consumes, reads, spec.announces))
        self._readers[spec.node_id] = tasks.create_task(self._reader(core, spec.node_id, ws), name=f"reader-{spec.node_id}")
        self._show_team()

    def _let_go(self, core: RelayCore, node_id: str) -> None:
        """A lost replica's address left DNS: stop trying to reach it (its reader is waiting in
        ``_reach_again``) and tell the core, which waits for it no more."""
        if (reader := self._readers.pop(node_id, None)) is not None:
            # Its address is gone, so its connect attempts fail. One that succeeded in this very
            # pass of the loop would be left open and unread: a narrow race, not handled.
            reader.cancel()
        self._lost.pop(node_id, None)
        reason = "its address left DNS while its connection was down"
        self._left[node_id] = f"let go: {reason}"
        self._apply(core.leave(node_id, reason, time.monotonic()))
        self._show_team()

    def team(self) -> Team:
        """Every agent of the run and whether the relay holds its connection."""

        def status(spec: AgentSpec) -> AgentStatus:
            if spec.node_id in self.conns or spec.node_id in self.reached:
                return AgentStatus(spec.node_id, spec.tool, "connected")
            if spec.node_id in self._left:
                return AgentStatus(spec.node_id, spec.tool, "lost", self._left[spec.node_id])
            if spec.node_id in self._lost:
                return AgentStatus(spec.node_id, spec.tool, "lost", self._lost[spec.node_id])
            return AgentStatus(spec.node_id, spec.tool, "unreachable")

        return tuple(status(s) for s in self.specs)

    def _show_team(self) -> None:
        if self.observer is not None:
            self.observer(self.team())

    # --- the run ---------------------------------------------------------------------------
    async def run(self) -> RunMetrics:
        """Connect, broadcast, relay until the final answer (or timeout), then write results.

        Raises :class:`StorageError` when the results cannot be written at all."""
        try:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            self.framelog = FrameLog(self.out_dir / "frames.jsonl")
        except OSError as exc:
            raise StorageError(f"cannot write the run's results in {self.out_dir}: {exc}") from exc
        self._wall0 = time.monotonic()
        configured = self.specs
        self.specs = await discovery.present(configured, self.settings.connect_timeout, self.resolve)
        absent = discovery.unresolved(configured, self.specs) or discovery.missing_team(self.lineup, self.specs)
        faults = network_faults(self.settings, [s.node_id for s in self.specs], self.task.task_id)
        if self.gateway is not None and faults is not None:
            # On a protocol's own wire the faults act below its client, at the taps, and the
            # core's links carry none: recovery is the client's, not the relay's.
            self.gateway.faults, self.gateway.origin, faults = faults.plan, self._wall0, None
        core = self.core = RelayCore(
            self.run_id,
            self.adapter,
            [(s.node_id, s.tool) for s in self.specs],
            self.settings.routing,
            self.settings.topic_table(),
            self.settings.max_frame_bytes,
            origin=self._wall0,
            rejoin_grace=self.settings.rejoin_grace,
            faults=faults,
            sources={s.node_id: s.announces for s in self.specs if s.entry},
            share_start=self.share_start,
        )
        try:
            try:
                if absent is not None:  # ended now, not after RUN_TIMEOUT with nobody to answer
                    raise ConnectError(absent)
                await self._connect(core)
            except ConnectError as exc:
                self.connect_error = exc
                self._apply(core.fail(run_status(exc), str(exc), time.monotonic()))
            if core.end is not None:
                await self._close_all()  # failed to connect, or cancelled while connecting
            else:
                async with asyncio.TaskGroup() as tasks:
                    for node_id, ws in list(self.conns.items()):
                        self._readers[node_id] = tasks.create_task(
                            self._reader(core, node_id, ws), name=f"reader-{node_id}"
                        )
                    self._apply(
                        core.start(
                            self.task.doc, self.task.question, self.settings.chunk_size, time.monotonic(),
                            self.task.history,
                        )
                    )
                    entries = [s for s in configured if s.dns_name is not None]
                    if entries and self.settings.discovery_interval > 0 and self.gateway is None:
                        self._discovery = tasks.create_task(self._rediscover(core, entries, tasks), name="discovery")
                    try:
                        async with asyncio.timeout(self.settings.run_timeout):
                            await self._done.wait()
                    except TimeoutError:
                        self._apply(core.expire(time.monotonic(), self.settings.run_timeout))
                    await self._close_all()  # the readers end with their connections
        finally:
            for timer in self._timers:
                timer.cancel()
            self._flush()
            self.framelog.close()
        key = collect.relay_key(self.settings.keys_dir)
        sent = {node for node, agent in core.agents.items() if agent.pkts_sent > 0}
        # Only an agent this relay admitted can hold a workspace of this run: what it never
        # reached, or refused (a process at an agent's address that proved nothing), is not asked.
        admitted = [s for s in self.specs if s.node_id in core.agents and core.agents[s.node_id].status != "registered"]
        folders, missing = await collect.gather(admitted, Path(self.settings.workspace_root), self.run_id,
                                                self.staging, key, set(self._left), sent,
                                                relay_tls(self.settings))  # fmt: skip
        try:
            return self.finalize(core, folders, missing)
        except OSError as exc:
            raise StorageError(
                f"cannot write the run's results in {self.out_dir}: {exc}"
                + (f" (the run had ended: {self.storage_error})" if self.storage_error else "")
            ) from exc

    @property
    def staging(self) -> Path:
        """Where workspaces fetched from agents on other hosts wait for the archive."""
        return self.out_dir / ".workspaces"

    def cancel(self, reason: str, status: str = "cancelled") -> None:
        """End the run now with ``status``; ``run`` then finishes and writes everything."""
        if self.core is not None and self.core.end is None:
            self._apply(self.core.fail(status, reason, time.monotonic()))

    def finalize(self, core: RelayCore, folders: dict[str, Path], missing: dict[str, str]) -> RunMetrics:
        """Hand what the relay saw to the run's one finishing step (``evaluation/outcome.py``),
        with the agents' workspaces in ``folders`` (``missing``: those that could not be had)."""
        now = time.monotonic()
        end = core.end or RunEnd("running")
        ending = Ending(end.status, end.error, core.final.payload.answer if core.final else "",
                        core.final.payload.made_by if core.final else {})  # fmt: skip
        totals: Totals | None = core.totals
        if self.storage_error is not None:
            # After a failed log write the core has counted frames the log lacks (perhaps the
            # final answer itself): the run reports the failure, and the counters of the log as
            # written, so metrics.json still agrees with it.
            ending, totals = Ending(run_status(StorageError(self.storage_error)), self.storage_error), None
        wire = WireEnd(core.router.mode.value, totals, core.agents, core.membership, core.elapsed_ms(now),
                       (now - self._wall0) * 1000, announced(self.heard),
                       self.gateway.layers() if self.gateway else None)  # fmt: skip
        metrics = finish_run(self.out_dir, self.settings, self.task, ending, run_id=self.run_id, wire=wire,
                             workspaces=folders, missing=missing)  # fmt: skip
        shutil.rmtree(self.staging, ignore_errors=True)  # fetched copies: now in the archive
        return metrics


def announced(heard: dict[str, Announcement]) -> Announced:
    """What the agents announced about their model, as ``metrics.json`` reports it."""
    models = [a for a in heard.values() if a.backend]
    return Announced(
        backends=frozenset(a.backend for a in models), kinds=frozenset(a.model_kind for a in models),
        schemas=frozenset(a.tool for a in heard.values() if a.schemas),
        scoring={a.tool: ScoringChoice(a.answer_choice, a.passage_ms, a.answer_choice_why)
                 for a in heard.values() if a.answer_choice},
    )  # fmt: skip
