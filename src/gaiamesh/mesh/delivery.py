"""The relay core's delivery: how a frame goes to its receivers, is counted and logged, under the
network faults its links impose (a lost copy logged and redelivered), how the orchestrators'
sub-tasks go to a worker of their role, and the end of the run.

:class:`Delivery` is the layer of :class:`~gaiamesh.mesh.core.RelayCore` below the events: every
frame the relay sends is delivered here, through :meth:`Delivery._deliver`, and logged through
the books (``books.py``), so each counter is the sum of the frame log.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import RunStatus
from .books import Books
from .faults import Fate, FaultModel
from .frames import NETWORK_SRC, Packet, PacketType, SubTaskPacket
from .links import Links, Retry
from .outcome import Outcome, RunEnd, Send, Work
from .protocols import ProtocolAdapter
from .records import FaultNote, FrameRecord, FrameStatus
from .routing import Router
from .subtasks import Assigned, SubTasks, failed_result

QUEUED = frozenset({PacketType.SUBTASK.value, PacketType.RESULT.value})


class Delivery(Books):
    """Where the frames of a run go, what is in flight, and whether the run has ended."""

    def __init__(
        self,
        run_id: str,
        adapter: ProtocolAdapter,
        router: Router,
        lineup: Iterable[tuple[str, str]],
        origin: float,
        faults: FaultModel | None,
    ) -> None:
        super().__init__(lineup, origin)
        self.run_id = run_id
        self.adapter = adapter
        self.router = router
        self.end: RunEnd | None = None
        self._in_flight: dict[str, Work] = {}  # pipeline work, one per agent
        self._subtasks = SubTasks()  # the orchestrators' sub-tasks: who sent each, who works on it
        self._seq = 0  # sequence numbers of the relay's own packets (doc_init is 0)
        # What the network fault model holds (nothing without faults).
        self.links = Links(faults, self.run_clock)

    def _deliver(
        self,
        out: Outcome,
        src: str,
        blob: bytes,
        packet: Packet,
        header: int,
        dst: list[str],
        now: float,
        received: bool,
        status: FrameStatus = "accepted",
        decode_us: float | None = None,
        arrived: Fate | None = None,
        retry: Fate | None = None,
    ) -> None:
        """Send a frame to ``dst`` and log it (``arrived``: how a frame its link held came in;
        ``retry``: the fate of a lost copy redelivered now)."""
        ptype = packet.type.value
        if isinstance(packet, SubTaskPacket):
            for node_id in dst:
                self._subtasks.assigned[packet.payload.sub_task_id] = Assigned(node_id, Work(blob, packet, header))
        elif ptype not in QUEUED:
            consumes = self.router.consumes
            for node_id in dst:
                if consumes(node_id, ptype):  # work to redeliver if it dies (not what it only reads)
                    self._in_flight[node_id] = Work(blob, packet, header)
        crossing = self.links.impose(out, blob, dst, now, arrived, retry)  # network faults: copies held, lost
        self._log(
            out,
            FrameRecord.of(
                n=self.totals.frames, t_ms=self._rel(now), src=src, dst=crossing.dst, blob=blob, received=received,
                status=status, header_size=header, type=ptype, tag=packet.tag,
                token_used=packet.token_used, seq=packet.seq if received else None, decode_us=decode_us,
                fault=crossing.note,
            ),
        )  # fmt: skip
        if crossing.dst and self.links.model is None:
            out.sends.append(Send(tuple(crossing.dst), blob))
        for node_id, fate in crossing.lost:
            self._lose(out, src, Work(blob, packet, header), node_id, fate, 0, now)

    # --- network faults: lost copies -------------------------------------------------------
    def _lose(self, out: Outcome, src: str, work: Work, node_id: str, fate: Fate, i: int, now: float) -> None:
        """Copy ``i`` (0: the first) of ``work`` to ``node_id`` was lost on the way: log it, and
        redeliver it when its fate says, or end the run when every copy was lost."""
        packet = work.packet
        self._log(
            out,
            FrameRecord.of(
                n=self.totals.frames, t_ms=self._rel(now), src=src, dst=[node_id], blob=work.blob, received=False,
                status="dropped_fault", header_size=work.header, type=packet.type.value, tag=packet.tag,
                token_used=packet.token_used, fault=FaultNote(["loss"], attempt=i + 1),
            ),
        )  # fmt: skip
        if (gave_up := self.links.retry_later(out, node_id, work, fate, i)) is not None:
            self._finish(out, now, RunStatus.FRAME_LOST, gave_up)

    def _retry(self, out: Outcome, retry: Retry, now: float) -> None:
        """The next copy of a lost one: lost again, or redelivered (through :meth:`_deliver`,
        like the redelivery of a dead agent's work)."""
        fate, work = retry.fate, retry.work
        if retry.node not in self.router.live:
            return  # the agent is gone: lost() handed its work in flight on, rejoin() re-sends the rest
        if retry.attempt < len(fate.lost):
            self._lose(out, NETWORK_SRC, work, retry.node, fate, retry.attempt, now)
            return
        self._deliver(out, NETWORK_SRC, work.blob, work.packet, work.header, [retry.node], now, received=False,
                      status="redelivered", retry=fate)  # fmt: skip
        out.notes.append(f"[{self._s(now):7.2f}s] redelivered {work.packet.type.value} to {retry.node} (lost on the way)")

    # --- queues -----------------------------------------------------------------------------
    def _pick_worker(self, packet: SubTaskPacket, exclude: Iterable[str]) -> list[str]:
        task, skip = packet.payload, [packet.src, *exclude]
        chosen = task.assigned_agent_id
        if chosen is not None and chosen not in skip and chosen in self.router.members(task.assigned_agent_role):
            return [chosen]  # the sender's choice, live and of the role
        return self.router.pick(task.assigned_agent_role, skip)

    def _reassign(self, out: Outcome, task_id: str, assigned: Assigned, now: float) -> None:
        work = assigned.work
        assert isinstance(work.packet, SubTaskPacket)
        del self._subtasks.assigned[task_id]
        dst = self._pick_worker(work.packet, [assigned.worker])
        if not dst:
            role = work.packet.payload.assigned_agent_role
            self._fail_subtask(
                out, work.packet, f"worker {assigned.worker} died and no other live {role!r} agent is left", now
            )
            return
        self._deliver(
            out, NETWORK_SRC, work.blob, work.packet, work.header, dst, now, received=False, status="redelivered"
        )
        out.notes.append(f"[{self._s(now):7.2f}s] redelivered sub-task {task_id} to {dst[0]}")

    def _fail_subtask(self, out: Outcome, packet: SubTaskPacket, message: str, now: float) -> None:
        """Answer a sub-task nobody can take with a ``FAILED`` result from the relay itself."""
        task = packet.payload
        self._seq += 1
        result = failed_result(self.run_id, self._seq, packet, message)
        blob = self.adapter.encode(result.to_dict())
        owner = self._subtasks.owners.get(task.sub_task_id, packet.src)
        dst = [owner] if owner in self.router.live else []
        self._deliver(out, NETWORK_SRC, blob, result, self.adapter.header_bytes(blob, result), dst, now, received=False)
        out.notes.append(f"[{self._s(now):7.2f}s] sub-task {task.sub_task_id} failed: {message}")

    # --- the end ----------------------------------------------------------------------------
    def _finish(self, out: Outcome, now: float, status: RunStatus, error: str | None = None) -> None:
        if self.end is not None:
            return
        self.end = RunEnd(status, error)
        self.done_at = now
        out.end = self.end
        sends, held_in = self.links.let_go()  # network faults: what the links still held
        out.sends += sends
        for arrival in held_in:
            self._reject(out, arrival.node, arrival.blob, now,
                         f"run {self.run_id} already ended ({self.end.status}) while "
                         f"network faults held this frame ({arrival.fate.delay_ms:.0f} ms)")  # fmt: skip
        out.notes.append(f"[{self._s(now):7.2f}s] run ends: {status}" + (f" ({error})" if error else ""))
