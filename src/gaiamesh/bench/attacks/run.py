"""``gaiamesh bench-attacks``' runs on the relay's wire: a run with the attacker
(``wiretap.py``) in front of one agent and its cell, judged by the run's own records
(``judge.py``); and the admission attacks, each making its own attempt (a rogue at an agent's
address, a handshake sent again, an observer's request). Attack traffic goes only to this bench's
own agents on loopback, is bounded (one tampered frame, one rogue, one replayed request per cell)
and stops with the run. The matrix of columns and attacks is ``matrix.py``'s.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from http import HTTPStatus
from pathlib import Path

from websockets.asyncio.server import Request, Response, ServerConnection, serve

from ...agents.teams import agent_specs, lineup
from ...deploy.local import free_port, free_port_block
from ...errors import RunError, RunStatus
from ...evaluation.finish import run_and_finish
from ...evaluation.metrics import RunMetrics
from ...mesh import admission, wiretls
from ...mesh.frames import Announcement
from ...mesh.localtls import issue_tls
from ...mesh.protocols.native import HELLO
from ...mesh.relay import MeshNetwork
from ...mesh.subprotocols import subprotocol
from ...settings import AgentSpec, Settings
from ...tasks import Task
from . import native
from .cells import Cells, lines_of
from .judge import (
    ATTACKS,
    AttackRow,
    CrossProof,
    Line,
    Outcome,
    downgrade,
    fallback,
    flip,
    judge_crossproof,
    judge_fallback,
    judge_tls,
    judge_wire,
    read_by_tap,
    truncate,
)
from .judge import what_the_tap_read as tap_read
from .wiretap import Seen, Splice, Tamper, TlsSplice, Way, intercept


def tamper_for(attack: str, window_s: float) -> Tamper | None:
    """The attacker's plan for a wire attack (None: the tap, which only records)."""
    plans: dict[str, Callable[[], Tamper]] = {
        "flip": lambda: Tamper("alter", alter=flip),
        "truncate": lambda: Tamper("alter", alter=truncate),
        "downgrade": lambda: Tamper("alter", alter=downgrade),
        "fallback": lambda: Tamper("rehead", way=Way.DOWN, alter=fallback),
        "crossproof": lambda: _crossed(CrossProof()),
        "replay": lambda: Tamper("copy"),
        "late": lambda: Tamper("hold", hold_s=window_s + 1.0),
        "reorder": lambda: Tamper("swap", way=Way.DOWN),
    }
    return plans[attack]() if attack in plans else None


def _crossed(rewrite: CrossProof) -> Tamper:
    return Tamper("rehead", way=Way.DOWN, alter=rewrite.request, reanswer=rewrite.answer)


async def through_attacker(settings: Settings, task: Task, target: AgentSpec, tamper: Tamper | None,
                           run_dir: Path, seen: Seen | None = None) -> tuple[RunMetrics, Seen, str]:  # fmt: skip
    """One run with the attacker in front of ``target`` (AGENTS names the attacker's port): its
    metrics, what the attacker saw, and why the run ended (``relayed``)."""
    seen, ready, stop = seen or Seen(), asyncio.Event(), asyncio.Event()
    port = free_port()
    s = settings.model_copy(update={"agents": _agents(settings, target, port)})
    async with asyncio.TaskGroup() as tasks:
        tls = settings.wire_tls != "off"
        splice = (lambda: TlsSplice(tamper, seen)) if tls else (lambda: Splice(tamper, seen))
        tasks.create_task(intercept(port, target.port, splice, ready, stop))
        await ready.wait()
        try:
            metrics, why = await relayed(s, task, run_dir)
        finally:
            stop.set()
    return metrics, seen, why


async def relayed(settings: Settings, task: Task, run_dir: Path) -> tuple[RunMetrics, str]:
    """A run, and why it ended as the relay said it: a refused connection's reason without the
    advice its message adds for a user's run (a rogue the bench put at an agent's address is no
    port clash, and the evidence states the refusal)."""
    network = MeshNetwork(settings, task, run_dir, quiet=True, lineup=lineup(settings))
    metrics = await run_and_finish(network)
    refused = network.connect_error
    return metrics, refused.reason if refused is not None else metrics.error or ""


def _agents(settings: Settings, target: AgentSpec, port: int) -> str:
    return ",".join(f"{a.node_id}={a.tool}@{a.host}:{port if a.node_id == target.node_id else a.port}"
                    for a in agent_specs(settings))  # fmt: skip


async def rogue_run(settings: Settings, task: Task, target: AgentSpec, proof: str | None,
                    run_dir: Path) -> tuple[RunMetrics, str]:  # fmt: skip
    """A run whose AGENTS lead to a rogue claiming ``target``'s node and tool (with a captured
    ``proof`` of the real agent, or none); its metrics and why it ended (``relayed``)."""
    said = Announcement(node_id=target.node_id, tool=target.tool, consumes=frozenset({"search_docs"}))
    headers = {**said.headers(), **({admission.HEADER_AGENT_PROOF: proof} if proof else {})}

    async def listen(ws: ServerConnection) -> None:
        async for _ in ws:  # a rogue takes whatever it is sent
            pass

    def hello(conn: ServerConnection, request: Request) -> Response | None:
        """The native wire's hello (a plain GET): the rogue answers it as an agent does."""
        if request.path != HELLO:
            return None
        answer = conn.respond(HTTPStatus.OK, "ok\n")
        answer.headers.update(headers)
        return answer

    port = free_port_block(1)  # natively the relay asks port + NATIVE_PORT_OFFSET
    at = port + (settings.native_port_offset if settings.transport == "native" else 0)
    async with serve(listen, "127.0.0.1", at, subprotocols=[subprotocol(settings.protocol)],
                     process_request=hello, process_response=lambda conn, req, resp: resp.headers.update(headers),
                     ssl=_rogue_tls(settings, target, run_dir)):  # fmt: skip
        return await relayed(settings.model_copy(update={"agents": _agents(settings, target, port)}), task, run_dir)


def _rogue_tls(settings: Settings, target: AgentSpec, run_dir: Path) -> ssl.SSLContext | None:
    """Under WIRE_TLS the rogue serves TLS too, with a certificate naming the target's node that
    a CA of its own signed (it has no key of the mesh's CA; nobody has)."""
    if settings.wire_tls == "off":
        return None
    issue_tls(run_dir / "rogue-ca", ["localhost"], nodes=[target.announces])
    return wiretls.agent_context("tls", run_dir / "rogue-ca", target.announces)


async def send_raw(port: int, request: bytes, tls: bool = False) -> bytes:
    """``request`` as it is to 127.0.0.1:``port`` (``tls``: inside a TLS connection that shows no
    certificate and checks none, as any client can open); the head of the answer."""
    context = None
    if tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    except ssl.SSLError as exc:
        return f"TLS refused: {exc.reason or exc}".encode()
    try:
        writer.write(request)
        await writer.drain()
        return await asyncio.wait_for(reader.read(4096), timeout=5)
    except ssl.SSLError as exc:
        return f"TLS refused: {exc.reason or exc}".encode()
    finally:
        writer.close()


def observer_request(port: int, protocol: str, native_wire: bool = False) -> bytes:
    """A WebSocket upgrade request as any client makes it, naming the protocol, proving nothing
    (``native_wire``: the native wire's hello, as plain a GET)."""
    if native_wire:
        return f"GET {HELLO} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode()
    return (f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            f"Sec-WebSocket-Protocol: {subprotocol(protocol)}\r\n\r\n").encode()  # fmt: skip


def judge_handshake(answer: bytes) -> tuple[Outcome, str]:
    """An agent's answer to a handshake the relay did not make: 101 (an upgrade) or 200 (the
    native wire's hello) lets the sender in."""
    if answer.startswith(b"TLS refused: "):
        return "blocked", f"the agent's TLS refused it: {answer.decode()[len('TLS refused: '):]}"
    if not answer or answer[0] in (0x15, 0x16):  # an alert, or a handshake of TLS's own
        return "blocked", f"the agent's TLS refused it: {_tls_answer(answer)}"
    status = answer.split(b"\r\n", 1)[0].decode("latin-1")
    if status.startswith(("HTTP/1.1 101", "HTTP/1.1 200")):
        return "succeeded", f"the agent answered {status!r}: it would work for whoever sent it"
    body = answer.split(b"\r\n\r\n", 1)[-1].decode("utf-8", "replace").strip()
    return "blocked", f"the agent answered {status!r}: {body}"


def _tls_answer(answer: bytes) -> str:
    if not answer:
        return "it closed the connection without an answer"
    kinds = {0x15: "an alert", 0x16: "a new handshake of its own (the copied one cannot finish it)"}
    return f"it answered with {kinds.get(answer[0], 'TLS records')} ({len(answer)} bytes) and no HTTP"


def frames_lost(seen: Seen, tamper: Tamper | None, target: str, lines: list[Line]) -> int:
    """Frames the attacker delivered to the relay from ``target`` that the relay's log lacks."""
    delivered = sum(1 for way, _ in seen.frames if way is Way.UP)
    if tamper is not None and tamper.kind == "copy" and tamper.fired:
        delivered += 1
    return max(0, delivered - sum(1 for ln in lines if ln.src == target))


def wire_cell(cells: Cells, attack: str, base: Settings, task: Task, target: AgentSpec, run_dir: Path) -> Seen:
    tamper = tamper_for(attack, base.replay_window_s)
    m, seen, why = asyncio.run(through_attacker(base, task, target, tamper, run_dir))
    lines = lines_of(run_dir)
    lost = frames_lost(seen, tamper, target.node_id, lines) if base.wire_tls == "off" else 0
    if attack != "tap" and base.wire_tls != "off":
        if attack == "downgrade":
            cells.add(attack, "n/a", "both ends speak TLS 1.3 only: nothing weaker to fall back to, and the frame "
                      "whose envelope the attack strips is not to be seen", (m, run_dir), lost)  # fmt: skip
        else:
            mine = [e for e in m.membership if e.node_id == target.node_id]
            losses = [e.t_ms for e in mine if e.event == "lost"]
            refused = [ln for ln in lines if ln.src == target.node_id and ln.status == "rejected"]
            fired = tamper is not None and tamper.fired
            back = any(e.event == "rejoined" for e in mine)
            cells.add(attack, *judge_tls(attack, fired, losses, refused, back, m.status), (m, run_dir), lost)
        return seen
    if attack == "tap":
        read, chunks, question, answer = tap_read(read_by_tap([p for _, p in seen.frames]), task.doc,
                                                  task.question, cells.calm.prediction)  # fmt: skip
        got = read > 0 or question or answer
        what = f"document {read}/{chunks} chunks, question {'yes' if question else 'no'}, answer {'yes' if answer else 'no'}"
        if base.wire_tls != "off":
            sizes = sum(len(p) for _, p in seen.frames)
            what += f"; it still saw who talks to whom, when, and the sizes ({len(seen.frames)} records, {sizes} bytes)"
        cells.add(attack, "succeeded" if got else "blocked", f"the tap read: {what}", (m, run_dir), lost)
    elif attack == "reorder":
        refused = [ln for ln in lines if ln.status == "rejected"]
        if refused:
            cells.add(attack, "blocked", f"the relay refused: {refused[0].error}", (m, run_dir), lost)
        else:
            what = "answered as calm" if m.status == cells.calm.status and m.prediction == cells.calm.prediction else f"ended {m.status}"
            cells.add(attack, "succeeded" if tamper and tamper.fired else "n/a",
                      f"nothing refused the frames in the other order; the run {what}", (m, run_dir), lost)  # fmt: skip
    elif attack == "fallback":
        fired, after = (tamper.fired, tamper.after) if tamper is not None else (False, 0)
        said = tamper.answer if tamper is not None else b""
        cells.add(attack, *judge_fallback(fired, after, said, m.status, why), (m, run_dir), lost)
    elif attack == "crossproof":
        fired, after = (tamper.fired, tamper.after) if tamper is not None else (False, 0)
        cells.add(attack, *judge_crossproof(fired, after, m.status, why), (m, run_dir), lost)
    elif attack == "downgrade" and base.protocol == "json":
        cells.add(attack, "n/a", "json carries no envelope or proof to strip", (m, run_dir), lost)
    else:
        sent = tamper.sent if tamper is not None else None
        outcome, evidence = judge_wire(attack, sent, target.node_id, lines, m.status)
        cells.add(attack, outcome, evidence, (m, run_dir), lost)
    return seen


def admission_cells(cells: Cells, base: Settings, task: Task, target: AgentSpec, tapped: Seen, out: Path,
                    attacks: list[str], advance: Callable[[str], None]) -> None:  # fmt: skip
    proof = _header(tapped.response, admission.HEADER_AGENT_PROOF)  # the real agent's, from the tap
    for attack in [a.name for a in ATTACKS if a.where == "admission" and a.name in attacks]:
        advance(f"{cells.protocol:<10} {cells.transport:<6} {cells.security:<4} {attack}")
        if attack in ("impersonate", "reuse"):
            asyncio.run(rogue_cell(cells, attack, base, task, target, proof if attack == "reuse" else None, out / attack))
        elif attack == "handshake_replay":
            m, answer = asyncio.run(handshake_replayed(base, task, target, out / attack))
            cells.add(attack, *judge_handshake(answer), (m, out / attack))
        else:
            port = _port(base, target)
            asked = observer_request(port, base.protocol, base.transport == "native")
            cells.add(attack, *judge_handshake(asyncio.run(send_raw(port, asked, tls=base.wire_tls != "off"))))


async def rogue_cell(cells: Cells, attack: str, base: Settings, task: Task, target: AgentSpec, proof: str | None,
                     run_dir: Path) -> AttackRow:  # fmt: skip
    """``impersonate`` (``proof`` None) or ``reuse``: a rogue at ``target``'s address, judged by
    whether the relay refused it, and why."""
    m, why = await rogue_run(base, task, target, proof, run_dir)
    unseen = "the tap captured no proof to reuse (the handshake is encrypted); " if attack == "reuse" and not proof else ""
    if m.status == RunStatus.CONNECT_FAILED:
        return cells.add(attack, "blocked", f"{unseen}the relay refused the rogue: {why}", (m, run_dir))
    return cells.add(attack, "succeeded", f"the relay took the rogue as agent {target.node_id}: run {m.status}", (m, run_dir))


async def handshake_replayed(settings: Settings, task: Task, target: AgentSpec, run_dir: Path) -> tuple[RunMetrics, bytes]:
    """A run through the attacker, who sends the relay's upgrade request to the agent again as
    soon as the agent has answered it (well within the replay window); the agent's answer to the copy."""
    captured: asyncio.Queue[bytes] = asyncio.Queue()
    seen = Seen(on_handshake=captured.put_nowait)
    async with asyncio.TaskGroup() as tasks:
        run = tasks.create_task(_attacked_run(settings, task, target, run_dir, seen))
        try:
            request = await asyncio.wait_for(captured.get(), settings.connect_timeout)
        except TimeoutError:
            raise RunError(f"the relay did not reach agent {target.node_id} through the attacker within "
                           f"{settings.connect_timeout:.0f} s: no handshake to replay") from None  # fmt: skip
        answer = await send_raw(_port(settings, target), request)
        m = await run
    return m, answer


async def _attacked_run(settings: Settings, task: Task, target: AgentSpec, run_dir: Path, seen: Seen) -> RunMetrics:
    """A run with a passive attacker on the transport's wire (the native one's is HTTP-aware)."""
    if settings.transport == "native":
        return (await native.through_attacker(settings, task, target, None, run_dir, seen)).metrics
    return (await through_attacker(settings, task, target, None, run_dir, seen))[0]


def _port(settings: Settings, target: AgentSpec) -> int:
    """Where the relay's handshake goes: the agent's port, or natively its hello's."""
    return target.port + (settings.native_port_offset if settings.transport == "native" else 0)


def _header(head: bytes, name: str) -> str | None:
    for line in head.decode("latin-1").split("\r\n")[1:]:
        key, _, value = line.partition(":")
        if key.strip().lower() == name.lower():
            return value.strip()
    return None
