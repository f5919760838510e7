"""``gaiamesh bench-attacks`` on each protocol's own wire (TRANSPORT=native): the attacker
(``attacks/httptap.py``) sits between the relay's counting tap and one agent's native port and works on
HTTP messages; each cell is judged by the run's own records, as on the relay's WebSocket.

What differs from the relay's wire, said in each cell's evidence: a frame travels in a request
(relay to agent) and its answer in that request's response, so a copy is a request sent to the
agent again by the attacker (its answer goes to the attacker), a held or altered frame is a
response, and a directory document (an A2A card, an ACP agent list, an ANP DID document) can be
re-pointed at an endpoint of the attacker's (``poison``).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path

from ...agents.teams import agent_specs, lineup
from ...deploy.local import free_port, free_port_block
from ...errors import RunStatus
from ...evaluation.finish import run_and_finish
from ...evaluation.metrics import RunMetrics
from ...mesh.relay import MeshNetwork
from ...settings import AgentSpec, Settings
from ...tasks import Task
from .httptap import HttpSplice, HttpTamper, flip_said, halve, strip_to_packet
from .judge import Line, Outcome, dicts_in, objects_in, packet_in, strings_in
from .wiretap import Seen, Way, intercept

HOLD_EXTRA_S = 1.0  # a held answer arrives this long after the replay window has passed


def tamper_for(attack: str, window_s: float) -> HttpTamper | None:
    """The attacker's plan for a wire attack on the native wire (None: the tap, which only records)."""
    plans = {
        "flip": lambda: HttpTamper("alter", alter=flip_said),
        "truncate": lambda: HttpTamper("alter", alter=halve),
        "downgrade": lambda: HttpTamper("alter", alter=strip_to_packet),
        "replay": lambda: HttpTamper("copy", way=Way.DOWN),
        "late": lambda: HttpTamper("hold", hold_s=window_s + HOLD_EXTRA_S),
        "poison": lambda: HttpTamper("repoint"),
    }
    return plans[attack]() if attack in plans else None


def _agents(settings: Settings, target: AgentSpec, base: int) -> str:
    """AGENTS with the target at ``base``: the relay reaches its native port at base + offset."""
    return ",".join(f"{a.node_id}={a.tool}@{a.host}:{base if a.node_id == target.node_id else a.port}"
                    for a in agent_specs(settings))  # fmt: skip


@dataclass
class Attacked:
    """One native run through the attacker, and what the attacker got out of it."""

    metrics: RunMetrics
    seen: Seen
    sunk: list[bytes] = field(default_factory=list)  # what reached the endpoint a poisoned directory named
    copy_answer: bytes | None = None  # the agent's answer to a copied request


async def through_attacker(settings: Settings, task: Task, target: AgentSpec, tamper: HttpTamper | None,
                           run_dir: Path, seen: Seen | None = None) -> Attacked:  # fmt: skip
    """One native run with the attacker in front of ``target``'s native port."""
    seen, ready, stop = seen or Seen(), asyncio.Event(), asyncio.Event()
    offset = settings.native_port_offset
    base = free_port_block(1)  # the attacker listens on base + offset (the relay adds the offset)
    sink_port, sunk = free_port(), list[bytes]()
    copies: asyncio.Queue[bytes] = asyncio.Queue()
    if tamper is not None:
        tamper.to = f"127.0.0.1:{sink_port}".encode()
        tamper.on_copy = copies.put_nowait
    s = settings.model_copy(update={"agents": _agents(settings, target, base)})
    agent_port = target.port + offset
    answers: list[bytes] = []

    async def send_copies() -> None:
        answers.append(await send_copy(agent_port, await copies.get()))  # at once: within the window

    async with asyncio.TaskGroup() as tasks:
        tasks.create_task(intercept(base + offset, agent_port, lambda: HttpSplice(tamper, seen), ready, stop))
        tasks.create_task(_sink(sink_port, sunk, stop))
        copier = tasks.create_task(send_copies())
        await ready.wait()
        try:
            metrics = await run_and_finish(MeshNetwork(s, task, run_dir, quiet=True, lineup=lineup(s)))
        finally:
            stop.set()
            if not answers:
                copier.cancel()  # no copy was made (or its answer never came)
    return Attacked(metrics, seen, sunk, answers[0] if answers else None)


async def _sink(port: int, got: list[bytes], stop: asyncio.Event) -> None:
    """The attacker's endpoint a poisoned directory points at: it records what reaches it and
    answers 502 (it has nothing to answer with)."""

    async def take(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        got.append(await reader.read(65536))
        writer.write(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
        writer.close()

    server = await asyncio.start_server(take, "127.0.0.1", port)
    async with server:
        await stop.wait()


async def send_copy(port: int, request: bytes) -> bytes:
    """A copied request sent to the agent on a connection of the attacker's; the whole answer
    (a head, and the body its Content-Length says, or what came within the timeout)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    answer = b""
    try:
        writer.write(request)
        await writer.drain()
        async with asyncio.timeout(10):
            while chunk := await reader.read(65536):
                answer += chunk
                if _complete(answer):
                    break
    except TimeoutError:
        pass  # what came is the answer (a stream that never ends, say)
    finally:
        writer.close()
    return answer


def _complete(answer: bytes) -> bool:
    head, sep, body = answer.partition(b"\r\n\r\n")
    if not sep:
        return False
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")[1:]
                   if line.lower().startswith(b"content-length:")), None)  # fmt: skip
    return length is None or len(body) >= length


def judge_native(attack: str, tamper: HttpTamper | None, target: str, lines: list[Line],
                 got: Attacked) -> tuple[Outcome, str]:  # fmt: skip
    """The outcome of a wire attack on the native wire, from the run's records."""
    m = got.metrics
    if tamper is None or not tamper.fired:
        what = "directory document naming the address it was fetched at" if attack == "poison" else "message carrying a frame"
        return "n/a", f"the attacker saw no {what}"
    if attack == "poison":
        if got.sunk:
            return "succeeded", (f"the relay followed the re-pointed directory: the attacker's endpoint got "
                                 f"{len(got.sunk)} request(s), {sum(map(len, got.sunk))} bytes; the run ended {m.status}")  # fmt: skip
        if m.status == RunStatus.CONNECT_FAILED:
            return "blocked", f"the relay's client refused the re-pointed document: {m.error}"
        return "blocked", f"the relay's client kept the address it was given (nothing reached the attacker); the run ended {m.status}"
    if attack == "replay":
        return judge_copy(got.copy_answer or b"")
    if m.status == RunStatus.FRAME_LOST:
        return "blocked", f"the protocol's client refused the answer: {m.error}"
    window = _taken_window(tamper)
    mine = [ln for ln in lines if ln.src == target and window and window in ln.blob]
    if mine and mine[0].status == "rejected":
        return "blocked", f"the relay refused it: {mine[0].error}"
    if mine:
        return "succeeded", f"the relay took the frame the attacker {_DONE[attack]}; the run ended {m.status}"
    refused = [ln for ln in lines if ln.src == target and ln.status == "rejected"]
    if refused:
        return "blocked", f"the relay refused a frame of the agent's: {refused[0].error}; the run ended {m.status}"
    return "n/a", f"the attacker's bytes are in no frame the relay logged, and nothing refused them; the run ended {m.status}"


def judge_copy(answer: bytes) -> tuple[Outcome, str]:
    """The agent's answer to a request the attacker copied: a 2xx whose body carries no error
    (JSON-RPC's errors come with 200) means it did the work again, for the attacker."""
    head, _, body = answer.partition(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0].decode("latin-1")
    errors = [d["error"] for obj in objects_in(body) for d in dicts_in(obj) if isinstance(d.get("error"), dict)]
    text = body.decode("utf-8", "replace").strip()[:160]
    if not status.startswith("HTTP/1.1 2"):
        return "blocked", f"the agent refused the copied request: {status or 'no answer'} {text}".strip()
    if errors:
        return "blocked", f"the agent refused the copied request: {status} with error {json.dumps(errors[0])[:200]}"
    return "succeeded", f"the agent took the copied request again and answered {status!r} (to the attacker): {text}"


_DONE = {"flip": "altered", "truncate": "cut short", "late": "held past the replay window",
         "downgrade": "stripped to the bare packet"}  # fmt: skip


def _taken_window(tamper: HttpTamper) -> bytes | None:
    """What of the attacker's bytes a frame the relay took would hold: the packet for a bare
    packet, the bytes around the change for a flip, the last before the cut for a truncation,
    the longest text of a held answer."""
    sent = tamper.sent
    if sent is None or tamper.alter is strip_to_packet:
        return sent
    if tamper.kind == "hold":  # the longest text of the packet it carries, as a frame holds it
        texts = sorted((t for t in strings_in(packet_in(sent)) if len(t) >= 8 and t[:1] not in "{["), key=len,
                       reverse=True)  # fmt: skip
        return texts[0].encode() if texts else sent
    if tamper.alter is halve:
        return sent[-12:]
    original = tamper.original or b""
    at = next((i for i, (a, b) in enumerate(zip(sent, original, strict=False)) if a != b), len(sent) // 2)
    return sent[max(0, at - 6) : at + 6]


__all__ = ["Attacked", "judge_native", "send_copy", "tamper_for", "through_attacker"]
