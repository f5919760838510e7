"""``MeshAgent``: one tool behind a WebSocket at ``ws://HOST:PORT/ws``, with a private workspace."""

from __future__ import annotations

import asyncio
import http
import json
import logging
import shutil
import time
from pathlib import Path
from typing import Any

from websockets.asyncio.server import Request, Response, ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from .frames import FrameError, Packet, PacketType
from .llm import LLMClient, LLMError, LLMUsage
from .protocols import get_adapter
from .settings import Settings
from .tools import ToolContext, get_tool

log = logging.getLogger("gaiamesh.agent")


class MeshAgent:
    """Reacts to the packet type its tool consumes and emits the tool's result to the relay."""

    def __init__(self, settings: Settings, llm: LLMClient | None = None) -> None:
        self.settings = settings
        self.node_id = settings.node_id
        self.tool = get_tool(settings.tool)
        self.adapter = get_adapter(settings.protocol, settings.node_id, settings.keys_dir)
        self.llm = llm or LLMClient(
            settings.ollama_host,
            settings.model,
            settings.llm_temperature,
            settings.llm_seed,
            settings.llm_timeout,
        )
        self.workspace = Path(settings.workspace_root) / self.node_id
        self.workspace.mkdir(parents=True, exist_ok=True)
        self.run_id: str | None = None
        self.seq = 0
        self.memory: dict[str, Any] = {}
        self.listening = asyncio.Event()  # set once the WebSocket server accepts connections

    # --- workspace -------------------------------------------------------------------------
    def _start_run(self, run_id: str, question: str) -> None:
        """A new run: fresh workspace files, so the run's archive holds only this run."""
        self.run_id, self.seq = run_id, 0
        for child in self.workspace.iterdir():
            if child.is_dir():
                shutil.rmtree(child)
            else:
                child.unlink()
        self.memory = {
            "node_id": self.node_id,
            "tool": self.tool.name,
            "run_id": run_id,
            "question": question,
        }
        self._save_memory()

    def _log(self, record: dict[str, Any]) -> None:
        with (self.workspace / "agent.log").open("a", encoding="utf-8") as f:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")

    def _save_memory(self) -> None:
        (self.workspace / "memory.json").write_text(json.dumps(self.memory, indent=2, ensure_ascii=False))

    # --- protocol ---------------------------------------------------------------------------
    async def _emit(self, ws: ServerConnection, packet: Packet) -> None:
        record = packet.to_dict()
        await ws.send(self.adapter.encode(record))
        self._log({"t": time.time(), "event": "emit", "packet": record})

    async def handle(self, packet: Packet, ws: ServerConnection) -> None:
        """Filter by type, run the tool, emit its result (or an ``error`` packet)."""
        if packet.type is PacketType.DOC_INIT and packet.run_id != self.run_id:
            self._start_run(packet.run_id, packet.question)
        if packet.type is not self.tool.consumes:
            return
        if packet.run_id != self.run_id:
            self._start_run(packet.run_id, packet.question)
        usage = LLMUsage()
        ctx = ToolContext(llm=self.llm, usage=usage, memory=self.memory)
        started = time.perf_counter()
        self.seq += 1
        try:
            payload = await self.tool.run(ctx, packet)
            reply = Packet(
                type=self.tool.emits,
                run_id=packet.run_id,
                src=self.node_id,
                seq=self.seq,
                tag=self.tool.tag,
                question=packet.question,
                payload=payload,
                token_used=usage.tokens,
                llm_ms=round(usage.llm_ms, 3),
            )
        except (LLMError, ValueError, KeyError, TypeError) as exc:
            log.error("agent %s (%s) failed on %s: %s", self.node_id, self.tool.name, packet.type, exc)
            reply = Packet(
                type=PacketType.ERROR,
                run_id=packet.run_id,
                src=self.node_id,
                seq=self.seq,
                question=packet.question,
                payload={"tool": self.tool.name, "error": str(exc), "on": packet.type.value},
                token_used=usage.tokens,
                llm_ms=round(usage.llm_ms, 3),
            )
        self.memory.setdefault("steps", []).append(
            {
                "consumed": packet.type.value,
                "emitted": reply.type.value,
                "tokens": usage.tokens,
                "prompt_tokens": usage.prompt_tokens,
                "eval_tokens": usage.eval_tokens,
                "llm_calls": usage.log,
                "tool_ms": round((time.perf_counter() - started) * 1000, 1),
            }
        )
        self._save_memory()
        await self._emit(ws, reply)

    async def _connection(self, ws: ServerConnection) -> None:
        peer = ws.remote_address
        log.info("agent %s: relay connected from %s", self.node_id, peer)
        try:
            async for message in ws:
                blob = message.encode() if isinstance(message, str) else message
                try:
                    packet = Packet.parse(self.adapter.decode(blob))
                except FrameError as exc:
                    # Bad input is logged and dropped; the agent keeps serving.
                    self._log({"t": time.time(), "event": "rejected", "error": str(exc), "size": len(blob)})
                    log.warning("agent %s: rejected frame: %s", self.node_id, exc)
                    continue
                await self.handle(packet, ws)
        except ConnectionClosed:
            pass
        log.info("agent %s: relay %s disconnected", self.node_id, peer)

    @staticmethod
    def _health(conn: ServerConnection, request: Request) -> Response | None:
        # Plain HTTP GET /health for container healthchecks; /ws upgrades to a WebSocket.
        if request.path == "/health":
            return conn.respond(http.HTTPStatus.OK, "ok\n")
        if request.path != "/ws":
            return conn.respond(http.HTTPStatus.NOT_FOUND, "use /ws\n")
        return None

    async def serve(self, stop: asyncio.Event) -> None:
        """Serve until ``stop`` is set."""
        async with serve(
            self._connection,
            self.settings.agent_host,
            self.settings.port,
            process_request=self._health,
            max_size=4 * self.settings.max_frame_bytes,
        ):
            log.info(
                "agent %s (%s) listening on ws://%s:%d/ws",
                self.node_id,
                self.tool.name,
                self.settings.agent_host,
                self.settings.port,
            )
            self.listening.set()
            await stop.wait()
