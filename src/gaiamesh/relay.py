"""``MeshNetwork``: the relay. Connects to every agent, broadcasts the document at t=0, relays
every frame through itself while counting it, stops the clock at the first ``final_answer``,
then scores the answer and writes ``metrics.json``, ``frames.jsonl`` and the run archive."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

from . import tools
from .artifacts import write_archive
from .frames import FINAL_ANSWER_TAG, NETWORK_SRC, FrameError, Packet, PacketType, doc_init
from .metrics import AgentStats, Counters, FrameLog
from .protocols import get_adapter
from .routing import Router
from .scoring import get_scorer
from .settings import AgentSpec, Settings
from .tasks import Task

Reporter = Callable[[str], None]


class ConnectError(RuntimeError):
    """An agent did not accept the relay's connection before the deadline."""


class MeshNetwork:
    """Star-topology relay and metrics collector for one run."""

    def __init__(
        self, settings: Settings, task: Task, out_dir: Path, reporter: Reporter | None = None
    ) -> None:
        self.settings = settings
        self.task = task
        self.out_dir = Path(out_dir)
        self.report: Reporter = reporter or (lambda line: print(line, flush=True))
        self.adapter = get_adapter(settings.protocol, NETWORK_SRC, settings.keys_dir)
        self.specs: list[AgentSpec] = settings.agent_specs()
        if not self.specs:
            raise ValueError("no agents configured (AGENTS is empty)")
        for spec in self.specs:
            tools.get_tool(spec.tool)  # unknown tools fail before anything starts
        self.router = Router(
            settings.routing, [(a.node_id, a.tool) for a in self.specs], tools.subscriptions()
        )
        self.run_id = uuid.uuid4().hex[:16]
        self.counters = Counters(agents={a.node_id: AgentStats(a.node_id, a.tool) for a in self.specs})
        self.conns: dict[str, ClientConnection] = {}
        self.last_work: dict[str, tuple[bytes, Packet]] = {}
        self.tools_done: set[str] = set()
        self.status = "running"
        self.error: str | None = None
        self.final: Packet | None = None
        self._done = asyncio.Event()
        self._t0 = time.monotonic()
        self._wall0 = time.monotonic()
        self._done_at: float | None = None
        self.framelog: FrameLog | None = None

    # --- lifecycle ---------------------------------------------------------------------------
    def _ms(self) -> float:
        return (time.monotonic() - self._t0) * 1000

    def _finish(self, status: str, error: str | None = None) -> None:
        if self._done.is_set():
            return
        self.status, self.error = status, error
        self._done_at = time.monotonic()
        self._done.set()
        self.report(f"[{self._ms() / 1000:7.2f}s] run ends: {status}" + (f" ({error})" if error else ""))

    async def _connect_one(self, spec: AgentSpec, deadline: float) -> ClientConnection:
        last: Exception | None = None
        while time.monotonic() < deadline:
            try:
                return await connect(
                    spec.url,
                    max_size=4 * self.settings.max_frame_bytes,
                    open_timeout=max(0.5, min(5.0, deadline - time.monotonic())),
                )
            except (OSError, InvalidHandshake, TimeoutError) as exc:
                last = exc
            await asyncio.sleep(0.25)  # retry back-off while the agent starts
        raise ConnectError(
            f"agent {spec.node_id} ({spec.tool}) not reachable at {spec.url} after "
            f"{self.settings.connect_timeout:.0f}s: {last!r}"
        )

    async def _present(self, spec: AgentSpec) -> bool:
        """An optional agent is present when its host name resolves (its compose profile is on)."""
        if not spec.optional:
            return True
        try:
            await asyncio.get_running_loop().getaddrinfo(spec.host, spec.port)
        except OSError:
            return False
        return True

    async def start(self) -> None:
        """Connect to every agent (retrying until ``connect_timeout``); skip absent optional ones."""
        present = await asyncio.gather(*(self._present(s) for s in self.specs))
        for spec, here in zip(list(self.specs), present, strict=True):
            if not here:
                self.specs.remove(spec)
                self.router.remove(spec.node_id)
                del self.counters.agents[spec.node_id]
        self.router = Router(
            self.settings.routing, [(a.node_id, a.tool) for a in self.specs], tools.subscriptions()
        )
        deadline = time.monotonic() + self.settings.connect_timeout
        try:
            conns = await asyncio.gather(*(self._connect_one(s, deadline) for s in self.specs))
        except InvalidURI as exc:
            raise ConnectError(f"bad agent address: {exc}") from exc
        for spec, ws in zip(self.specs, conns, strict=True):
            self.conns[spec.node_id] = ws
            self.counters.agents[spec.node_id].status = "connected"
        self.report(
            f"relay: connected to {len(conns)} agents ({', '.join(f'{s.node_id}={s.tool}' for s in self.specs)}), "
            f"routing {self.router.mode.value}, protocol {self.settings.protocol}"
        )

    # --- sending -----------------------------------------------------------------------------
    async def _send(self, node_id: str, blob: bytes, packet: Packet) -> bool:
        ws = self.conns.get(node_id)
        if ws is None:
            return False
        try:
            await ws.send(blob)
        except ConnectionClosed:
            return False
        self.counters.bytes_tx += len(blob)
        stats = self.counters.agents[node_id]
        stats.pkts_received += 1
        stats.bytes_received += len(blob)
        if packet.type.value in tools.subscriptions().get(stats.tool, frozenset()):
            self.last_work[node_id] = (blob, packet)
        return True

    async def _deliver(self, src: str, blob: bytes, packet: Packet, dst: list[str]) -> list[str]:
        delivered = []
        for node_id in dst:
            if await self._send(node_id, blob, packet):
                delivered.append(node_id)
        return delivered

    async def broadcast_init(self, doc: str, question: str) -> None:
        """t=0: the document in ``chunk_size`` chunks, and the question, to the agents."""
        self._t0 = time.monotonic()
        packet = doc_init(self.run_id, doc, question, self.settings.chunk_size)
        record = packet.to_dict()
        blob = self.adapter.encode(record)
        header = self.adapter.header_size(record)
        dst = self.router.destinations(packet.type.value, NETWORK_SRC)
        delivered = await self._deliver(NETWORK_SRC, blob, packet, dst)
        self._account(NETWORK_SRC, blob, packet, header, delivered, received=False)
        self.report(
            f"[{self._ms() / 1000:7.2f}s] doc_init  network -> {','.join(delivered)} "
            f"({len(record['payload']['chunks'])} chunks, {len(blob)} B each)"
        )

    def _account(
        self, src: str, blob: bytes, packet: Packet, header: int, delivered: list[str], received: bool
    ) -> None:
        c = self.counters
        c.pkt_cnt += 1
        c.header_overhead += header * ((1 if received else 0) + len(delivered))
        c.token_sum += packet.token_used
        c.llm_ms += packet.llm_ms
        assert self.framelog is not None
        self.framelog.record(
            src=src,
            dst=delivered,
            blob=blob,
            received=received,
            status="accepted",
            packet=packet.to_dict(),
            header_size=header,
        )

    # --- receiving ---------------------------------------------------------------------------
    def _reject(self, src: str, blob: bytes, error: str) -> None:
        self.counters.rejected_cnt += 1
        self.counters.agents[src].rejected += 1
        assert self.framelog is not None
        self.framelog.record(src=src, dst=[], blob=blob, received=True, status="rejected", error=error)
        self.report(f"[{self._ms() / 1000:7.2f}s] REJECTED frame from agent {src}: {error}")

    async def on_frame(self, src: str, blob: bytes) -> None:
        """Count, validate and relay one frame from agent ``src``."""
        self.counters.bytes_rx += len(blob)
        stats = self.counters.agents[src]
        stats.pkts_sent += 1
        stats.bytes_sent += len(blob)
        if len(blob) > self.settings.max_frame_bytes:
            self._reject(
                src,
                blob,
                f"oversized frame: {len(blob)} bytes > MAX_FRAME_BYTES={self.settings.max_frame_bytes}",
            )
            return
        try:
            record = self.adapter.decode(blob)
            packet = Packet.parse(record)
        except FrameError as exc:
            self._reject(src, blob, str(exc))
            return
        if packet.src != src:
            self._reject(src, blob, f"packet claims src {packet.src!r} but arrived from agent {src!r}")
            return
        if packet.run_id != self.run_id:
            self._reject(
                src, blob, f"packet belongs to run {packet.run_id!r}, not the current run {self.run_id!r}"
            )
            return
        header = self.adapter.header_size(record)
        stats.token_used += packet.token_used
        stats.llm_ms += packet.llm_ms
        self.last_work.pop(src, None)  # the agent answered: its work is no longer in flight
        if packet.type is PacketType.ERROR:
            self._account(src, blob, packet, header, [], received=True)
            await self._on_agent_error(src, packet)
            return
        self.tools_done.add(stats.tool)
        dst = self.router.destinations(packet.type.value, src)
        delivered = await self._deliver(src, blob, packet, dst)
        self._account(src, blob, packet, header, delivered, received=True)
        self.report(
            f"[{self._ms() / 1000:7.2f}s] {packet.type.value:<10} {src} -> {','.join(delivered) or '-'} "
            f"({len(blob)} B, {packet.token_used} tokens)"
        )
        if packet.tag == FINAL_ANSWER_TAG and self.final is None:
            self.final = packet
            self._finish("ok")

    async def _on_agent_error(self, src: str, packet: Packet) -> None:
        tool = self.router.tool_of(src)
        message = f"agent {src} ({tool}) failed: {packet.payload.get('error', 'no detail')}"
        self.counters.agents[src].note = message
        self.report(f"[{self._ms() / 1000:7.2f}s] {message}")
        self._finish("agent_error", message)

    async def _agent_lost(self, node_id: str, reason: str) -> None:
        """Deregister a dead agent; hand its in-flight work to a live sibling, or end the run."""
        stats = self.counters.agents[node_id]
        if stats.status == "dead":
            return
        stats.status = "dead"
        stats.note = f"disconnected at {self._ms():.0f} ms: {reason}"
        self.router.remove(node_id)
        self.conns.pop(node_id, None)
        if self._done.is_set():
            return
        tool = stats.tool
        self.report(f"[{self._ms() / 1000:7.2f}s] agent {node_id} ({tool}) disconnected: {reason}")
        work = self.last_work.pop(node_id, None)
        if work is None and tool in self.tools_done:
            return  # its part of the pipeline is already done
        if not self.router.group_alive(tool):
            self._finish(
                "agent_dead", f"agent {node_id} ({tool}) disconnected and no other {tool!r} agent is alive"
            )
            return
        if work is not None:
            blob, packet = work
            dst = self.router.destinations(packet.type.value, packet.src, exclude=[node_id])
            dst = [n for n in dst if self.router.tool_of(n) == tool][:1]
            delivered = await self._deliver(packet.src, blob, packet, dst)
            self.counters.header_overhead += self.adapter.header_size(packet.to_dict()) * len(delivered)
            assert self.framelog is not None
            self.framelog.record(
                src=NETWORK_SRC,
                dst=delivered,
                blob=blob,
                received=False,
                status="redelivered",
                packet=packet.to_dict(),
                header_size=self.adapter.header_size(packet.to_dict()),
            )
            self.counters.pkt_cnt += 1
            self.report(
                f"[{self._ms() / 1000:7.2f}s] redelivered {packet.type.value} to {','.join(delivered)}"
            )

    async def _reader(self, node_id: str, ws: ClientConnection) -> None:
        reason = "connection closed"
        try:
            async for message in ws:
                await self.on_frame(node_id, message.encode() if isinstance(message, str) else message)
        except ConnectionClosed as exc:
            reason = f"connection closed ({exc.rcvd.code if exc.rcvd else 'no close frame'})"
        await self._agent_lost(node_id, reason)

    # --- the run -----------------------------------------------------------------------------
    async def run(self) -> dict[str, Any]:
        """Connect, broadcast, relay until the final answer (or timeout), then write results."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self._wall0 = time.monotonic()
        self.framelog = FrameLog(self.out_dir / "frames.jsonl", self._wall0)
        readers: list[asyncio.Task[None]] = []
        try:
            try:
                await self.start()
            except ConnectError as exc:
                self._finish("connect_failed", str(exc))
            if not self._done.is_set():
                readers = [
                    asyncio.create_task(self._reader(n, ws), name=f"reader-{n}")
                    for n, ws in self.conns.items()
                ]
                await self.broadcast_init(self.task.doc, self.task.question)
                try:
                    await asyncio.wait_for(self._done.wait(), timeout=self.settings.run_timeout)
                except TimeoutError:
                    self._finish(
                        "timeout", f"no final answer within RUN_TIMEOUT={self.settings.run_timeout:.0f}s"
                    )
        finally:
            for ws in list(self.conns.values()):
                with contextlib.suppress(ConnectionClosed, OSError):
                    await ws.close()
            for t in readers:
                t.cancel()
            await asyncio.gather(*readers, return_exceptions=True)
            self.framelog.close()
        return self.finalize()

    def finalize(self) -> dict[str, Any]:
        """Score, write ``metrics.json`` and ``config.json``, and archive the run."""
        end = self._done_at or time.monotonic()
        prediction = str(self.final.payload.get("answer", "")) if self.final else ""
        scores = (
            get_scorer(self.settings.scorer)(prediction, self.task.answer)
            if self.final
            else {
                "quality_score": 0.0,
                "exact_match": 0,
                "rouge_l": 0.0,
                "gaia_match": 0,
            }
        )
        counts = self.counters.as_dict()
        agents = counts.pop("agents")
        elapsed_ms = (end - self._t0) * 1000
        metrics: dict[str, Any] = {
            "status": self.status,
            "error": self.error,
            "run_id": self.run_id,
            "task_id": self.task.task_id,
            "question": self.task.question,
            "answer": self.task.answer,
            "prediction": prediction,
            "protocol": self.settings.protocol,
            "routing": self.router.mode.value,
            "model": self.settings.model,
            "scorer": self.settings.scorer,
            **counts,
            "elapsed_ms": round(elapsed_ms, 3),
            "wall_ms": round((time.monotonic() - self._wall0) * 1000, 3),
            "network_share": round(max(0.0, 1 - counts["llm_ms"] / elapsed_ms), 4) if elapsed_ms > 0 else 0.0,
            **scores,
            "frames": self.framelog.lines if self.framelog else 0,
            "agents": agents,
        }
        (self.out_dir / "metrics.json").write_text(json.dumps(metrics, indent=2, ensure_ascii=False))
        (self.out_dir / "config.json").write_text(
            json.dumps({"settings": self.settings.public_dict(), "task": str(self.task.path)}, indent=2)
        )
        root = Path(self.settings.workspace_root)
        write_archive(
            self.out_dir / "run_artifacts.tar.gz",
            workspaces={a.node_id: root / a.node_id for a in self.specs},
            files=[self.out_dir / n for n in ("frames.jsonl", "metrics.json", "config.json")],
        )
        return metrics
