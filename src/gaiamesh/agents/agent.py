"""``MeshAgent``: one tool behind a WebSocket at ``ws://HOST:PORT/ws``, with a private workspace.

An agent serves many runs, one after another or at the same time: everything it knows about a
run (sequence numbers, memory, log) is kept per ``run_id``, in memory and on disk under
``workspaces/<node_id>/<run_id>/`` (``agent.log``, ``memory.json``). Frames that belong to no
run it can name are logged in ``workspaces/<node_id>/agent.log``. The relay, when it cannot
read a run's folder on its own disk, fetches it with a signed ``GET /runs/<run_id>/workspace``
(``mesh/workspaces.py``).
"""

from __future__ import annotations

import asyncio
import errno
import http
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from websockets.asyncio.server import Request, Response, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.typing import Subprotocol

from .. import ports
from ..errors import ConfigError, PortTaken, Refused
from ..mesh import admission, wiretls, workspaces
from ..mesh.frames import Announcement, FrameError, Packet, PacketType, ResultPacket, make_packet
from ..mesh.freshness import Freshness
from ..mesh.payloads import SubTask, SubTaskResult, ToolFailure
from ..mesh.protocols import ProtocolAdapter, get_adapter
from ..mesh.protocols.signed import SigningKeyError, load_public
from ..mesh.subprotocols import protocol_of
from ..models.llm import LLMClient, LLMUsage, ModelError
from ..settings import Settings
from ..tools.tool import Tool, ToolContext
from .modelcheck import check_model
from .native import serve_native
from .outbox import Outbox, WsOutbox
from .runstate import RelayRuns, RunState, earlier_memory

log = logging.getLogger("gaiamesh.agents.agent")

MAX_RUNS_IN_MEMORY = 64  # older runs' state is dropped from memory; their files stay on disk


class MeshAgent:
    """Reacts to the packet type its tool consumes and emits the tool's result to the relay."""

    def __init__(self, settings: Settings, tool: Tool, llm: LLMClient | None = None) -> None:
        self.settings = settings
        self.node_id = settings.node_id
        self.tool = tool  # declared where it is written, handed over by whoever starts the agent
        self.ablated = self.tool.name in settings.ablated
        if self.ablated and self.tool.passthrough is None:
            raise ConfigError(f"ABLATE names {self.tool.name!r}, which cannot be left out: it makes the answer")
        if self.tool.setup is not None:
            self.tool.setup(settings)
        self.adapter = get_adapter(settings.protocol, settings.node_id, settings.keys_dir, settings.replay_window_s)
        # The relay's handshake challenges this agent answered: a captured one sent again is refused.
        self.handshakes = Freshness(settings.replay_window_s) if settings.replay_window_s > 0 else None
        self._adapters: dict[str, ProtocolAdapter | None] = {settings.protocol: self.adapter}
        self.llm = llm or LLMClient.from_settings(settings, tool=tool.name)
        self.workspace = Path(settings.workspace_root) / self.node_id
        self.workspace.mkdir(parents=True, exist_ok=True)
        self.runs: OrderedDict[str, RunState] = OrderedDict()
        self.relay_runs = RelayRuns()  # the runs the relay's native hellos announced (agents/native.py)
        self.announcement = Announcement(
            node_id=self.node_id, tool=self.tool.name, consumes=frozenset({self.tool.consumes.value}),
            reads=frozenset(t.value for t in self.tool.reads),
        )  # fmt: skip
        # Sub-tasks this agent handed out, with the outbox they went out on.
        self._waiting: dict[str, tuple[Outbox, asyncio.Future[SubTaskResult]]] = {}
        self.listening = asyncio.Event()  # set once the WebSocket server accepts connections
        self.schemas = False  # whether the tool's model output is held to JSON schemas (check_model)

    async def check_model(self) -> None:
        """Before serving: the model server answers, serves MODEL and can score where
        ANSWER_CHOICE=likelihood asks it to. Raises ModelError (or ConfigError) in one line; the
        handshake then announces the backend, kind, schemas and answer choice, which
        ``metrics.json`` records (``modelcheck.py``)."""
        checked = await check_model(self.llm, self.tool, self.settings, self.node_id)
        self.schemas, self.settings = checked.schemas, checked.settings
        self.announcement = self.announcement.model_copy(update=checked.announced)

    # --- runs ------------------------------------------------------------------------------
    def run_state(self, run_id: str, question: str, keep: bool = True) -> RunState:
        """The state of run ``run_id``, created on first sight; ``keep``: with its workspace
        folder on disk (a relay's run; one from outside the relay gets it when its tool works)."""
        state = self.runs.get(run_id)
        if state is None:
            folder = self.workspace / run_id  # run ids are validated: letters, digits, - and _
            memory = earlier_memory(folder) or {"node_id": self.node_id, "tool": self.tool.name, "run_id": run_id,
                                                "question": question}  # fmt: skip
            state = self.runs[run_id] = RunState(run_id, folder, memory)
            while len(self.runs) > MAX_RUNS_IN_MEMORY:
                self.runs.popitem(last=False)
        if keep:
            state.keep()
        return state

    def held_document(self) -> str | None:
        """The document of the newest run this agent holds one for (what a text request is
        about when it sends none), or None."""
        docs = [state.doc for state in reversed(self.runs.values()) if state.doc is not None]
        return "".join(docs[0].chunks) if docs else None

    def _log_unowned(self, record: dict[str, Any]) -> None:
        with (self.workspace / "agent.log").open("a", encoding="utf-8") as f:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")

    # --- protocol --------------------------------------------------------------------------
    def adapter_for(self, protocol: str) -> ProtocolAdapter | None:
        """This agent's adapter for ``protocol``, or None when it cannot speak it (an unknown
        protocol, or ``signed`` without this node's key)."""
        if protocol not in self._adapters:
            try:
                self._adapters[protocol] = get_adapter(
                    protocol, self.node_id, self.settings.keys_dir, self.settings.replay_window_s
                )
            except (ValueError, OSError) as exc:
                log.warning("agent %s cannot speak %s: %s", self.node_id, protocol, exc)
                self._adapters[protocol] = None
        return self._adapters[protocol]

    def _select_subprotocol(self, conn: ServerConnection, offered: Sequence[Subprotocol]) -> Subprotocol | None:
        # Each connection (each run) names its wire protocol as a subprotocol (mesh/subprotocols.py).
        for name in offered:
            protocol = protocol_of(name)
            if protocol is not None and self.adapter_for(protocol) is not None:
                return name
        return None

    def _connection_adapter(self, ws: ServerConnection) -> ProtocolAdapter:
        if ws.subprotocol is None:
            return self.adapter  # a peer that names no protocol gets this agent's default
        protocol = protocol_of(ws.subprotocol)
        adapter = None if protocol is None else self.adapter_for(protocol)
        assert adapter is not None  # only speakable protocols are selected
        return adapter

    async def _emit(self, out: Outbox, state: RunState, packet: Packet) -> None:
        record = packet.to_dict()
        started = time.perf_counter()
        blob = out.adapter.encode(record)
        # The protocol's cost of this message on the sender's side (encoding, signing), kept
        # with the run before the frame leaves: the relay reads it when the run ends.
        encode_us = round((time.perf_counter() - started) * 1e6, 1)
        state.memory.setdefault("encode_us", []).append(encode_us)
        state.save()
        if not await out.send(blob):
            state.log({"t": time.time(), "event": "undelivered", "packet": record, "error": "relay gone"})
            return
        state.log({"t": time.time(), "event": "emit", "packet": record, "encode_us": encode_us})

    async def ask(self, out: Outbox, state: RunState, parent: Packet, task: SubTask) -> SubTaskResult:
        """Send ``task`` to the relay's sub-task queue and wait for its result (at most
        ``SUBTASK_TIMEOUT``; a ``TimeoutError`` says none came)."""
        packet = make_packet(
            PacketType.SUBTASK, task, run_id=parent.run_id, src=self.node_id, seq=state.next_seq(),
            question=parent.question,
        )  # fmt: skip
        waiting: asyncio.Future[SubTaskResult] = asyncio.get_running_loop().create_future()
        self._waiting[task.sub_task_id] = (out, waiting)
        try:
            await self._emit(out, state, packet)
            async with asyncio.timeout(self.settings.subtask_timeout):
                return await waiting
        finally:
            self._waiting.pop(task.sub_task_id, None)

    def _result(self, packet: ResultPacket) -> None:
        entry = self._waiting.get(packet.payload.sub_task_id)
        if entry is not None and not entry[1].done():
            entry[1].set_result(packet.payload)

    async def handle(self, packet: Packet, out: Outbox) -> None:
        """Filter by type, run the tool, emit its result (or an ``error`` packet)."""
        if isinstance(packet, ResultPacket):
            self._result(packet)
            return
        if packet.type is not self.tool.consumes and packet.type is not PacketType.DOC_INIT:
            return
        state = self.run_state(packet.run_id, packet.question, keep=out.from_relay)
        if packet.type is PacketType.DOC_INIT:
            state.doc = packet.payload
        if packet.type is not self.tool.consumes:
            return
        state.keep()  # the tool works for this run, wherever it comes from: its folder is made now
        usage = LLMUsage()
        ctx = ToolContext(
            llm=self.llm, usage=usage, memory=state.memory, question=packet.question, doc=state.doc,
            workspace=state.folder, settings=self.settings, schemas=self.schemas,
            ask=lambda task: self.ask(out, state, packet, task), node_id=self.node_id,
        )  # fmt: skip
        started = time.perf_counter()
        envelope: dict[str, Any] = {"run_id": packet.run_id, "src": self.node_id, "question": packet.question}
        try:
            if self.ablated and self.tool.passthrough is not None:
                payload = self.tool.passthrough(packet)  # left out: its input, handed on unchanged
            else:
                payload = await self.tool.run(ctx, packet)
            envelope["question"] = ctx.question
            envelope["seq"] = state.next_seq()
            reply = make_packet(
                self.tool.emits, payload, tag=self.tool.tag, token_used=usage.reported, **envelope
            )  # fmt: skip
        except (ModelError, ValueError, KeyError, TypeError) as exc:
            log.error("agent %s (%s) failed on %s: %s", self.node_id, self.tool.name, packet.type, exc)
            failure = ToolFailure.of(self.tool.name, packet.type.value, exc)
            envelope["seq"] = state.next_seq()
            reply = make_packet(PacketType.ERROR, failure, token_used=usage.reported, **envelope)
        state.memory.setdefault("steps", []).append(
            {
                "consumed": packet.type.value,
                "emitted": reply.type.value,
                "seq": reply.seq,  # the packet this step emitted: the relay counts its model time by it
                "llm_ms": round(usage.llm_ms, 3),
                "tokens": usage.tokens,
                "prompt_tokens": usage.prompt_tokens,
                "eval_tokens": usage.eval_tokens,
                "llm_calls": usage.log,
                "tool_ms": round((time.perf_counter() - started) * 1000, 1),
            }
        )
        await self._emit(out, state, reply)  # it saves the memory before the frame leaves

    def decode_or_log(self, adapter: ProtocolAdapter, blob: bytes) -> Packet:
        """Decode one frame; bad input is logged and raised (a native answer refuses it)."""
        try:
            return adapter.decode_packet(blob)
        except FrameError as exc:
            record = {"t": time.time(), "event": "rejected", "error": str(exc), "size": len(blob)}
            self._log_unowned(record)
            log.warning("agent %s: rejected frame: %s", self.node_id, exc)
            raise

    def _decode(self, adapter: ProtocolAdapter, blob: bytes) -> Packet | None:
        try:
            return self.decode_or_log(adapter, blob)
        except FrameError:
            return None  # bad input is logged and dropped; the agent keeps serving

    async def _connection(self, ws: ServerConnection) -> None:
        peer = ws.remote_address
        log.info("agent %s: relay connected from %s", self.node_id, peer)
        # A nonce cache of this connection's own: a relay that lost the last one sends its work
        # in flight again, the same bytes, on this one.
        adapter = self._connection_adapter(ws).per_connection()
        out = WsOutbox(ws, adapter)
        # Each packet is handled in its own task: runs that share this connection overlap.
        async with asyncio.TaskGroup() as tasks:
            try:
                async for message in ws:
                    packet = self._decode(adapter, message.encode() if isinstance(message, str) else message)
                    if packet is not None:
                        tasks.create_task(self.handle(packet, out))
            except ConnectionClosed:
                pass
            # The relay is gone: no result will come back on this connection, so the work that
            # waits for one stops now instead of at SUBTASK_TIMEOUT.
            for sent_on, waiting in list(self._waiting.values()):
                if sent_on is out:
                    waiting.cancel()
        log.info("agent %s: relay %s disconnected", self.node_id, peer)

    async def _http(self, conn: ServerConnection, request: Request) -> Response | None:
        # Plain HTTP on the agent's port: GET /health for container healthchecks, the relay's
        # signed GET /runs/<run_id>/workspace (see mesh/workspaces.py); /ws upgrades to a WebSocket.
        if request.path == "/health":
            return conn.respond(http.HTTPStatus.OK, "ok\n")
        if why := wiretls.refusal(self.settings.wire_tls, wiretls.peer_node(conn.transport)):
            log.warning("agent %s: refused a client: %s", self.node_id, why)
            return conn.respond(http.HTTPStatus.FORBIDDEN, f"{why}\n")
        run_id = workspaces.run_of(request.path)
        if run_id is not None:
            try:
                workspaces.check(request.headers.get("Authorization"), self._relay_key(), self.node_id, run_id,
                                 time.time())  # fmt: skip
                blob = await asyncio.to_thread(workspaces.pack, self.workspace / run_id)
            except Refused as exc:
                return conn.respond(exc.status, f"{exc}\n")
            headers = Headers([("Content-Type", "application/gzip"), ("Content-Length", str(len(blob))),
                               ("Connection", "close")])  # fmt: skip
            return Response(http.HTTPStatus.OK.value, http.HTTPStatus.OK.phrase, headers, blob)
        if request.path != "/ws":
            return conn.respond(http.HTTPStatus.NOT_FOUND, "use /ws\n")
        if why := admission.relay_refusal(self.settings.mesh_token, request.headers, self.handshakes):
            # another stack's or bench's relay, or a captured handshake sent again: this agent
            # works only for the runs it was started for
            log.warning("agent %s: refused a relay: %s", self.node_id, why)
            return conn.respond(http.HTTPStatus.FORBIDDEN, f"{why}\n")
        return None

    def _relay_key(self) -> Ed25519PublicKey | None:
        """The relay's public key from KEYS_DIR/public.json (None: no keys were given)."""
        try:
            return load_public("workspace", Path(self.settings.keys_dir)).get(workspaces.SIGNER)
        except SigningKeyError:
            return None

    def _announce(self, conn: ServerConnection, request: Request, response: Response) -> None:
        # The handshake response says who this agent is and what it consumes (see mesh/frames.py).
        if response.status_code == http.HTTPStatus.SWITCHING_PROTOCOLS:
            for name, value in self.announcement.headers().items():
                response.headers[name] = value
            challenge = request.headers.get(admission.HEADER_CHALLENGE)
            if self.settings.mesh_token and challenge:
                chose = response.headers.get("Sec-WebSocket-Protocol", "")  # the proof binds it
                response.headers[admission.HEADER_AGENT_PROOF] = admission.agent_proof(
                    self.settings.mesh_token, challenge, self.node_id, self.tool.name, chose
                )

    async def serve(self, stop: asyncio.Event) -> None:
        """Serve until ``stop`` is set. A port it cannot listen on is a :class:`PortTaken`
        naming the port, its holder and what moves it: never a silent exit that leaves the
        relay to find whatever else answers there."""
        host, port = self.settings.agent_host, self.settings.port
        try:
            server = await serve(
                self._connection,
                host,
                port,
                process_request=self._http,
                process_response=self._announce,
                select_subprotocol=self._select_subprotocol,
                compression=None,  # frames cross the wire as the protocol encoded them (see mesh/relay.py)
                max_size=4 * self.settings.max_frame_bytes,
                ssl=wiretls.agent_context(self.settings.wire_tls, Path(self.settings.keys_dir), self.node_id),
            )
        except OSError as exc:
            if exc.errno not in (errno.EADDRINUSE, errno.EACCES):
                raise
            raise PortTaken(
                f"agent {self.node_id} ({self.tool.name}) cannot listen on {host}:{port}: it is held by "
                f"{ports.holder(port)}. Move the agents with --base-port (gaiamesh run, bench), or PORT "
                "and AGENTS (an agent of your own); a stack of this project: make down"
            ) from exc
        async with server:
            log.info(
                "agent %s (%s) listening on %s://%s:%d/ws",
                self.node_id,
                self.tool.name,
                wiretls.scheme(self.settings.wire_tls, "wss", "ws"),
                self.settings.agent_host,
                self.settings.port,
            )
            async with asyncio.TaskGroup() as tasks:
                # Its native protocols on their own port, for TRANSPORT=native runs (agents/native.py).
                tasks.create_task(serve_native(self, stop), name="native")
                self.listening.set()
                await stop.wait()
