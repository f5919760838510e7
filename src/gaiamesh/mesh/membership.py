"""The relay core's line-up as it changes during a run: an agent registered, lost, back
(``rejoin``), a replica found by DNS (``join``) or let go (``leave``). A lost agent's work goes
to a live agent of its tool, or waits ``rejoin_grace`` for one to come back; an agent that comes
back gets the run's ``doc_init`` again, and the work that waited for its tool.

:class:`Membership` is the layer of :class:`~gaiamesh.mesh.core.RelayCore` that handles these
events; it delivers through :class:`~gaiamesh.mesh.delivery.Delivery`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..errors import RunStatus
from .delivery import Delivery
from .faults import FaultModel
from .frames import NETWORK_SRC, PacketType
from .outcome import Outcome, Work
from .protocols import ProtocolAdapter
from .records import AgentMetrics, MemberChange
from .routing import Router

SUBTASK = PacketType.SUBTASK.value


class Membership(Delivery):
    """The agents of a run: the line-up starts as given, and grows by the replicas :meth:`join`
    adds (a let go one stays, counted, but is waited for no more)."""

    def __init__(
        self,
        run_id: str,
        adapter: ProtocolAdapter,
        router: Router,
        lineup: Iterable[tuple[str, str]],
        origin: float,
        faults: FaultModel | None,
        rejoin_grace: float,
        sources: Mapping[str, str] | None,
    ) -> None:
        super().__init__(run_id, adapter, router, lineup, origin, faults)
        # node id -> the src its packets carry, where that is not the node id itself: replicas
        # found through one dns: entry of AGENTS share its NODE_ID (see discovery.py).
        self._sources = dict(sources or {})
        # Seconds the run waits for an agent of a tool whose every agent is lost (0: it ends
        # `agent_dead` at once). Work for that tool waits too, and goes to the first that returns.
        self.rejoin_grace = rejoin_grace
        self._waiting: dict[str, tuple[float, list[Work]]] = {}  # tool -> (deadline, pending work)
        self._tools_done: set[str] = set()
        self._init: Work | None = None  # doc_init, for an agent that comes back mid-run

    def register(
        self, node_id: str, consumes: frozenset[str] | None = None, reads: frozenset[str] = frozenset()
    ) -> None:
        """An agent is connected; ``consumes`` and ``reads`` are what it announced (None: use
        the configuration)."""
        if consumes is not None:
            self.router.subscribe(node_id, consumes, reads)
        self.agents[node_id].status = "connected"

    def rejoin(
        self, node_id: str, now: float, consumes: frozenset[str] | None = None, reads: frozenset[str] = frozenset()
    ) -> Outcome:
        """Agent ``node_id`` is back (restarted, reconnected): register it again and route to it.
        It gets the run's ``doc_init`` again (marked ``redelivered``) so it knows the run, unless
        its tool works on ``doc_init`` and has already answered (it would answer twice)."""
        self.router.restore(node_id)
        return self._welcome(node_id, now, consumes, reads, "rejoined")

    def join(
        self,
        node_id: str,
        tool: str,
        now: float,
        consumes: frozenset[str] | None = None,
        reads: frozenset[str] = frozenset(),
        stamps: str | None = None,
    ) -> Outcome:
        """A replica found by DNS while the run goes on is connected (``stamps``: the entry's node
        id it puts in its packets' ``src``): add it to the line-up and route to it from now on,
        as :meth:`rejoin` does (the run's ``doc_init``, the work that waits for its tool). One
        that was let go and came back keeps the counts it had."""
        self.agents.setdefault(node_id, AgentMetrics(node_id=node_id, tool=tool))
        if stamps is not None and stamps != node_id:
            self._sources[node_id] = stamps
        was = self.router.mode
        self.router.add(node_id, tool)
        out = self._welcome(node_id, now, consumes, reads, "joined")
        if self.router.mode is not was and self.end is None:
            out.notes.append(f"[{self._s(now):7.2f}s] routing {was.value} -> {self.router.mode.value}: "
                             f"{tool!r} has {len(self.router.members(tool))} live agents")  # fmt: skip
        return out

    def leave(self, node_id: str, reason: str, now: float) -> Outcome:
        """Let go of lost replica ``node_id`` (its address left DNS): nothing waits for it any
        more. :meth:`lost` already handed its work on, or holds it for its tool's next agent."""
        out = Outcome()
        stats = self.agents[node_id]
        if stats.status != "dead":
            return out  # only a lost agent is let go: a connected one is still in the run
        stats.status = "left"
        stats.note = f"{stats.note}; let go at {self._ms(now):.0f} ms: {reason}".lstrip("; ")
        self._member(now, node_id, "left")
        if self.end is None:
            out.notes.append(f"[{self._s(now):7.2f}s] agent {node_id} ({stats.tool}) let go: {reason}")
        return out

    def _welcome(
        self,
        node_id: str,
        now: float,
        consumes: frozenset[str] | None,
        reads: frozenset[str],
        how: MemberChange,
    ) -> Outcome:
        """Agent ``node_id`` is connected and routable (it ``rejoined`` or ``joined``): it gets the
        run's ``doc_init``, and the work that waited for its tool."""
        out = Outcome()
        stats = self.agents[node_id]
        self.register(node_id, consumes, reads)
        stats.note = f"{how} at {self._ms(now):.0f} ms"
        self._member(now, node_id, how)
        if self.end is not None or self._init is None:
            return out
        tool = stats.tool
        out.notes.append(f"[{self._s(now):7.2f}s] agent {node_id} ({tool}) {how} the run")
        init = self._init
        if not (self.router.consumes(node_id, init.packet.type.value) and tool in self._tools_done):
            self._deliver(out, NETWORK_SRC, init.blob, init.packet, init.header, [node_id], now, received=False,
                          status="redelivered")  # fmt: skip
        _, pending = self._waiting.pop(tool, (0.0, []))
        for work in pending:  # what waited for its tool while none of its agents was alive
            self._deliver(out, NETWORK_SRC, work.blob, work.packet, work.header, [node_id], now, received=False,
                          status="redelivered")  # fmt: skip
        if pending:
            out.notes.append(f"[{self._s(now):7.2f}s] agent {node_id} takes over {len(pending)} waiting packet(s)")
        return out

    def lost(self, node_id: str, reason: str, now: float) -> Outcome:
        """Agent ``node_id`` is gone: deregister it; hand its work in flight to a live
        same-tool agent, or end the run when its tool is needed and none is left."""
        out = Outcome()
        stats = self.agents[node_id]
        if stats.status in ("dead", "left"):
            return out
        stats.status = "dead"
        stats.note = f"disconnected at {self._ms(now):.0f} ms: {reason}"
        self._member(now, node_id, "lost")
        self.router.remove(node_id)
        work = self._in_flight.pop(node_id, None)
        if self.end is not None:
            return out
        tool = stats.tool
        out.notes.append(f"[{self._s(now):7.2f}s] agent {node_id} ({tool}) disconnected: {reason}")
        if self.router.consumes(node_id, SUBTASK):
            # A worker: its sub-tasks go to a live worker of its role, or fail back to their
            # orchestrator, whose plan decides what happens next. The run goes on.
            for task_id, assigned in self._subtasks.of_worker(node_id):
                self._reassign(out, task_id, assigned, now)
            return out
        if work is None and tool in self._tools_done:
            return out  # its part of the pipeline is already done
        if not self.router.group_alive(tool):
            self._orphaned(out, node_id, tool, work, now)
        elif work is not None:
            self._hand_on(out, node_id, tool, work, now)
        return out

    def _orphaned(self, out: Outcome, node_id: str, tool: str, work: Work | None, now: float) -> None:
        """No agent of ``tool`` is alive: wait ``rejoin_grace`` for one, or end the run."""
        if self.rejoin_grace > 0:
            deadline, pending = self._waiting.get(tool, (now + self.rejoin_grace, []))
            self._waiting[tool] = (deadline, pending + ([work] if work is not None else []))
            out.notes.append(
                f"[{self._s(now):7.2f}s] no {tool!r} agent is alive: waiting up to "
                f"{self.rejoin_grace:.0f}s (REJOIN_GRACE) for one to come back"
            )
            out.wake_at = deadline
            return
        self._finish(
            out,
            now,
            RunStatus.AGENT_DEAD,
            f"agent {node_id} ({tool}) disconnected and no other {tool!r} agent is alive",
        )

    def _hand_on(self, out: Outcome, node_id: str, tool: str, work: Work, now: float) -> None:
        """A lost agent's work in flight goes to a live agent of its tool."""
        dst = self.router.destinations(work.packet.type.value, work.packet.src, exclude=[node_id])
        dst = [n for n in dst if self.router.tool_of(n) == tool][:1]
        self._deliver(
            out, NETWORK_SRC, work.blob, work.packet, work.header, dst, now, received=False,
            status="redelivered",
        )  # fmt: skip
        out.notes.append(
            f"[{self._s(now):7.2f}s] redelivered {work.packet.type.value} to {','.join(dst)}"
        )
