"""``MeshNetwork``: the asyncio layer around :class:`~gaiamesh.mesh.core.RelayCore`.

It connects to every agent through the run's transport (``transports/``, chosen once), hands
every event (the document at t=0, each frame, each lost connection, the timeout) to the core with
the time it happened, and carries out the outcomes once per pass of the event loop: the frame
records go to ``frames.jsonl`` first, then the bytes go out, one write per agent, never waiting
on one. Replicas found by DNS mid-run are ``replicas.py``'s. At the end it gathers the agents'
workspaces and hands back what happened on the wire (:class:`~.wireend.WireEnd`); the caller
finishes the run (``evaluation/finish.py``).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from websockets.exceptions import InvalidURI

from ..errors import ConfigError, ConnectError, RunStatus, StorageError, run_status
from ..settings import AgentSpec, Settings
from ..tasks import Task
from . import collect, discovery
from .core import RelayCore
from .discovery import Lineup, Resolver
from .faults import network_faults
from .frames import Announcement
from .outcome import AgentStatus, Observer, Outcome, RunEnd, Team, outgoing, tell
from .protocols import get_adapter
from .records import FrameLog, FrameRecord, Totals
from .replicas import Replicas
from .transports import transport_for
from .wireend import Ending, WireEnd, announced

Reporter = Callable[[str], None]


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
        self.staging = self.out_dir / ".workspaces"  # workspaces fetched from other hosts wait here
        self.report: Reporter = reporter or (lambda line: print(line, flush=True))
        self.quiet = quiet  # no progress lines at all (benchmarks, batches)
        self.observer = observer  # the service's live event stream
        self.resolve = resolve  # the addresses of AGENTS' dns: entries (tests pass their own)
        self.run_id = run_id or uuid.uuid4().hex[:16]
        # TRANSPORT=native: each frame is a request of the protocol's own client (mesh/native/);
        # the core then speaks the adapter that encodes the packet inside the protocol's body.
        # External agents (mesh/external/) are reached beside the run's transport, by their own protocol.
        self.transport, self.externals = transport_for(settings, self.run_id, len(lineup.agents), lineup.externals)
        self.adapter = get_adapter(self.transport.inner, "network", settings.keys_dir, settings.replay_window_s)
        self.lineup = lineup
        self.specs: list[AgentSpec] = list(lineup.agents)
        if not self.specs:
            raise ConfigError(f"no agents of the {settings.strategy} strategy in AGENTS ({settings.agents!r})")
        self.heard: dict[str, Announcement] = {}  # node -> what it announced (its model: metrics.json)
        self.core: RelayCore | None = None
        self.framelog: FrameLog | None = None
        self.records: list[FrameRecord] = []  # the frame log as written, handed back at the end
        self._done = asyncio.Event()
        self._pending: list[Outcome] = []
        self.closing = False
        self._wall0 = time.monotonic()
        self.replicas = Replicas(self)  # replicas of dns: entries found or let go while the run goes on
        self._timers: list[asyncio.TimerHandle] = []
        self.storage_error: str | None = None  # the frame log could not be written: the run ends
        # What ended the run while connecting, with its parts (``reason``, ``hint``): the caller
        # that holds the network reads them; metrics.json has the whole message.
        self.connect_error: ConnectError | None = None

    # --- connecting ------------------------------------------------------------------------
    async def _connect(self, core: RelayCore) -> None:
        deadline = time.monotonic() + self.settings.connect_timeout
        await self.transport.open()
        # Each agent: its WebSocket, or (native) its tap, hello and protocol client.
        results = await asyncio.gather(*(self.transport.reach(s, deadline) for s in self.specs), return_exceptions=True)
        failures = [r for r in results if isinstance(r, Exception)]
        for spec, result in zip(self.specs, results, strict=True):
            if not isinstance(result, BaseException):
                said = result
                self.heard.update({spec.node_id: said} if said else {})
                core.register(spec.node_id, said.consumes if said else None, said.reads if said else frozenset())
        self.show_team()
        if failures:
            await self._close_all()
            first = failures[0]
            if isinstance(first, InvalidURI):
                raise ConnectError(f"bad agent address: {first}") from first
            raise first
        self.report(
            f"relay: connected to {self.transport.count()} agents "
            f"({', '.join(f'{s.node_id}={s.tool}' for s in self.specs)}), "
            f"routing {core.router.mode.value}, protocol {self.settings.protocol}"
            + (" on its own wire" if self.transport.own_wire else "")
        )
        for tool, made in sorted(announced(self.heard).scoring.items()):
            self.report(f"relay: {tool} chooses answers by {made.choice} ({made.why})")

    async def _close_all(self) -> None:
        self.closing = True
        self.replicas.stop()  # no look-up or new replica after the end
        await self.transport.close()

    # --- moving bytes ----------------------------------------------------------------------
    def apply(self, outcome: Outcome) -> None:
        """Queue the core's decision; it is carried out when this pass of the event loop ends,
        together with every other frame read in the same pass."""
        self._pending.append(outcome)
        loop = asyncio.get_running_loop()
        if len(self._pending) == 1:
            loop.call_soon(self._flush)
        if outcome.wake_at is not None and self.core is not None:
            core = self.core  # a grace runs out then: the core decides whether the run ends
            self._timers.append(loop.call_at(outcome.wake_at, lambda: self.apply(core.tick(time.monotonic()))))

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
                batch = [r for o in outcomes for r in o.records]
                self.framelog.write(batch)
                self.records += batch  # only what the log holds: the run is finished from these
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
        for node_id, blobs in outgoing(outcomes).items():
            self.transport.send(node_id, blobs)
        tell(outcomes, self.observer, None if self.quiet else self.report)
        if any(outcome.end is not None for outcome in outcomes):
            self._done.set()

    # --- what the transport tells (transports.Wire) ------------------------------------------
    def frame(self, node_id: str, blob: bytes) -> None:
        if self.core is not None:
            self.apply(self.core.receive(node_id, blob, time.monotonic()))

    def lost(self, node_id: str, reason: str) -> bool:
        core = self.core
        assert core is not None
        self.apply(core.lost(node_id, reason, time.monotonic()))
        self.show_team()
        return core.end is None

    def back(self, node_id: str, said: Announcement | None) -> None:
        assert self.core is not None
        consumes, reads = (said.consumes, said.reads) if said else (None, frozenset[str]())
        self.apply(self.core.rejoin(node_id, time.monotonic(), consumes, reads))
        self.show_team()

    def gave_up(self, node_id: str, why: str) -> None:
        # Recovery is the protocol client's: a frame it gave up on ends the run, named.
        if self.core is not None and self.core.end is None and not self.closing:
            self.apply(self.core.fail(RunStatus.FRAME_LOST, f"{self.settings.protocol} gave up on a frame to agent "
                                       f"{node_id}: {why}", time.monotonic()))  # fmt: skip

    def team(self) -> Team:
        """Every agent of the run and whether the relay holds its connection."""

        def status(spec: AgentSpec) -> AgentStatus:
            if self.transport.connected(spec.node_id):
                return AgentStatus(spec.node_id, spec.tool, "connected")
            if spec.node_id in self.replicas.left:
                return AgentStatus(spec.node_id, spec.tool, "lost", self.replicas.left[spec.node_id])
            if (why := self.transport.lost_why(spec.node_id)) is not None:
                return AgentStatus(spec.node_id, spec.tool, "lost", why)
            return AgentStatus(spec.node_id, spec.tool, "unreachable")

        return tuple(status(s) for s in self.specs)

    def down(self) -> set[str]:
        """The agents whose connection dropped and that the transport is reaching again."""
        return {s.node_id for s in self.specs if self.transport.lost_why(s.node_id) is not None}

    def show_team(self) -> None:
        if self.observer is not None:
            self.observer(self.team())

    # --- the run ---------------------------------------------------------------------------
    async def run(self) -> WireEnd:
        """Connect, broadcast, relay until the final answer (or timeout), gather the agents'
        workspaces, and hand back what happened on the wire: the caller finishes the run
        (``evaluation.finish.run_and_finish``). Raises :class:`StorageError` when the frame log
        cannot be opened at all."""
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
        faults = self.transport.faults(faults, self._wall0)  # native: at its taps, none on the core's links
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
                self.apply(core.fail(run_status(exc), str(exc), time.monotonic()))
            if core.end is not None:
                await self._close_all()  # failed to connect, or cancelled while connecting
            else:
                async with asyncio.TaskGroup() as tasks:
                    self.transport.serve(tasks, self)
                    self.apply(
                        core.start(
                            self.task.doc, self.task.question, self.settings.chunk_size, time.monotonic(),
                            self.task.history,
                        )
                    )
                    entries = [s for s in configured if s.dns_name is not None]
                    if entries and self.settings.discovery_interval > 0 and self.transport.rediscovers:
                        self.replicas.watch(core, entries, tasks)
                    try:
                        async with asyncio.timeout(self.settings.run_timeout):
                            await self._done.wait()
                    except TimeoutError:
                        self.apply(core.expire(time.monotonic(), self.settings.run_timeout))
                    await self._close_all()  # the readers end with their connections
        finally:
            for timer in self._timers:
                timer.cancel()
            self._flush()
            self.framelog.close()
        ours = [s for s in self.specs if s.external is None]  # an external agent keeps no workspace of ours
        folders, missing = await collect.of_run(self.settings, ours, core.agents, self.run_id, self.staging,
                                                set(self.replicas.left))  # fmt: skip
        return self.wire_end(core, folders, missing)

    def cancel(self, reason: str, status: RunStatus = RunStatus.CANCELLED) -> None:
        """End the run now with ``status``; ``run`` then ends and hands back what happened."""
        if self.core is not None and self.core.end is None:
            self.apply(self.core.fail(status, reason, time.monotonic()))

    def wire_end(self, core: RelayCore, folders: dict[str, Path], missing: dict[str, str]) -> WireEnd:
        """What the relay saw of the run, with the agents' workspaces in ``folders`` (``missing``:
        those that could not be had), for the run's one finishing step (``evaluation/finish.py``)."""
        now = time.monotonic()
        end = core.end or RunEnd(RunStatus.RUNNING)
        ending = Ending(end.status, end.error, core.final.payload.answer if core.final else "",
                        core.final.payload.made_by if core.final else {})  # fmt: skip
        totals: Totals | None = core.totals
        if self.storage_error is not None:
            # After a failed log write the core has counted frames the log lacks (perhaps the
            # final answer itself): the run reports the failure, and the counters of the log as
            # written, so metrics.json still agrees with it.
            ending, totals = Ending(run_status(StorageError(self.storage_error)), self.storage_error), None
        return WireEnd(ending, core.router.mode.value, totals, core.agents, core.membership, core.elapsed_ms(now),
                       (now - self._wall0) * 1000, announced(self.heard), self.transport.layers(), self.records,
                       folders, missing, self.staging, self.storage_error,
                       self.externals.layers() if self.externals else None)  # fmt: skip

