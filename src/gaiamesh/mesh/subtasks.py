"""The sub-tasks of a run (the orchestrated strategy's queues): who sent each, who works on it,
and the rules a sub-task or a result must meet to be accepted. Pure bookkeeping for the relay
core, which routes by it (``core.py``) and answers a sub-task nobody can take (:func:`failed_result`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .frames import NETWORK_SRC, FrameError, Packet, PacketType, ResultPacket, SubTaskPacket, make_packet
from .outcome import Work
from .payloads import ErrorDetails, SubTaskResult


@dataclass
class Assigned:
    """A sub-task handed to a worker, not yet answered with a result."""

    worker: str
    work: Work


@dataclass
class SubTasks:
    owners: dict[str, str] = field(default_factory=dict)  # sub_task_id -> the orchestrator that sent it
    assigned: dict[str, Assigned] = field(default_factory=dict)  # sub_task_id -> worker working on it

    def check(self, src: str, packet: Packet) -> None:
        """Raise :class:`FrameError` for a sub-task whose id is taken, and for a result that does
        not answer a sub-task its sender is working on (no stray, duplicate or forged results
        reach the orchestrator)."""
        if isinstance(packet, SubTaskPacket) and packet.payload.sub_task_id in self.owners:
            raise FrameError(f"sub-task id {packet.payload.sub_task_id!r} is already used in this run")
        if isinstance(packet, ResultPacket):
            task_id = packet.payload.sub_task_id
            assigned = self.assigned.get(task_id)
            if task_id not in self.owners:
                raise FrameError(f"result for unknown sub-task {task_id!r}")
            if assigned is None:
                raise FrameError(f"result for sub-task {task_id!r}, which no agent is working on (answered already?)")
            if assigned.worker != src:
                raise FrameError(f"result for sub-task {task_id!r} from agent {src!r}; it is assigned to {assigned.worker!r}")

    def of_worker(self, node_id: str) -> list[tuple[str, Assigned]]:
        """The sub-tasks ``node_id`` is working on."""
        return [(task_id, a) for task_id, a in self.assigned.items() if a.worker == node_id]


def failed_result(run_id: str, seq: int, packet: SubTaskPacket, message: str) -> ResultPacket:
    """The ``FAILED`` result the relay itself sends for a sub-task nobody can take."""
    task = packet.payload
    result = make_packet(
        PacketType.RESULT,
        SubTaskResult(
            sub_task_id=task.sub_task_id, parent_task_id=task.parent_task_id,
            worker_agent_role=task.assigned_agent_role, status="FAILED",
            error_details=ErrorDetails(message=message, type="WorkerUnavailable"),
        ),
        run_id=run_id, src=NETWORK_SRC, seq=seq, question=packet.question,
    )  # fmt: skip
    assert isinstance(result, ResultPacket)
    return result
