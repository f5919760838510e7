"""The relays ``bench-overhead`` measures, each run as a process of its own
(``python -m gaiamesh.bench.overhead.relays floor|mesh AGENTS WORKDIR``), and the agents they serve:
``floor``, a byte-forwarding relay on the same stack (websockets, asyncio), and ``mesh``, ours
(``MeshNetwork``: decode, validate, route, count, frame log). Both carry the same packets."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import ServerConnection, serve

from ...agents.teams import lineup
from ...deploy.local import free_port
from ...evaluation.finish import run_and_finish
from ...mesh.connect import write_frames
from ...mesh.frames import FINAL_ANSWER_TAG, PacketType, make_packet
from ...mesh.relay import MeshNetwork
from ...mesh.routing import RoutingMode
from ...settings import Settings
from ...tasks import Task

TEXT = "The farm has an installed capacity of 148 megawatts. " * 20
PAYLOADS: dict[PacketType, dict[str, Any]] = {
    PacketType.SEARCH_DOCS: {"passages": [{"chunk": 0, "score": 1.0, "text": TEXT}], "n_chunks": 1},
    PacketType.EVENTS: {"facts": [{"text": TEXT, "score": 1.0}]},
    PacketType.DATA_EVENT: {
        "answer": "148 megawatts", "method": "reading", "question": "q?", "reading": "148 megawatts",
        "candidates": [], "facts_used": 1, "triples_seen": 0,
    },
}  # fmt: skip
RELAYS = ("floor", "mesh")
FLOOR_START = b"start"
Handler = Callable[[ServerConnection], Awaitable[None]]


def packet_bytes(run_id: str, src: str, ptype: PacketType, seq: int = 1) -> bytes:
    tag = FINAL_ANSWER_TAG if ptype is PacketType.DATA_EVENT else None
    packet = make_packet(ptype, PAYLOADS[ptype], run_id=run_id, src=src, seq=seq, tag=tag)
    return json.dumps(packet.to_dict()).encode()


def run_id_of(first: str | bytes) -> str:
    """The run id from the relay's first message: ``doc_init`` (mesh) or the floor's start."""
    if first in (FLOOR_START, FLOOR_START.decode()):
        return "bench"
    return str(json.loads(first)["run_id"])


# --- the relays, each in a process of its own ---------------------------------------------
async def floor_relay(urls: list[str]) -> None:
    """The floor: receive a frame, forward it unchanged to every other agent, nothing else.

    It moves bytes exactly as ``MeshNetwork`` does (frames read in one pass of the event loop
    leave in one socket write per agent), so the difference between the two is the relay's
    own work: decoding, validation, routing, counting and the frame log."""
    conns: list[ClientConnection] = [await connect(u, compression=None, max_size=None) for u in urls]
    for ws in conns:
        write_frames(ws, [FLOOR_START])
    pending: dict[ClientConnection, list[bytes]] = {}

    def flush() -> None:
        batch = dict(pending)
        pending.clear()
        for ws, blobs in batch.items():
            write_frames(ws, blobs)

    async def pump(ws: ClientConnection) -> None:
        others = [c for c in conns if c is not ws]
        async for message in ws:
            if not pending:
                asyncio.get_running_loop().call_soon(flush)
            for other in others:
                pending.setdefault(other, []).append(message)  # type: ignore[arg-type]

    async with asyncio.TaskGroup() as tasks:
        for ws in conns:
            tasks.create_task(pump(ws))


async def mesh_relay(agents: str, workdir: Path) -> None:
    """Our relay, as deployed: validation, counting and the frame log on; JSON, broadcast."""
    # No .env: the peers are this bench's own plain WebSocket servers, which prove no mesh token
    # (a developer's .env holds the compose stack's, and the relay would refuse them).
    settings = Settings(
        _env_file=None, agents=agents, routing=RoutingMode.BROADCAST, protocol="json",  # type: ignore[call-arg]
        workspace_root=workdir / "ws", run_timeout=600, connect_timeout=30, max_frame_bytes=1 << 20, mesh_token="",
    )  # fmt: skip
    task = Task("overhead", "x" * 400, "q?", "a", workdir)
    await run_and_finish(MeshNetwork(settings, task, workdir / "relay", quiet=True, lineup=lineup(settings)))


def _main(argv: list[str]) -> None:
    """``python -m gaiamesh.bench.overhead.relays floor|mesh AGENTS WORKDIR``: one relay process."""
    kind, agents, workdir = argv
    if kind == "floor":
        urls = [f"ws://{a.split('@', 1)[1]}/ws" for a in agents.split(",")]
        asyncio.run(floor_relay(urls))
    else:
        asyncio.run(mesh_relay(agents, Path(workdir)))


@asynccontextmanager
async def serve_agents(handlers: list[Handler], relay: str, workdir: Path) -> Any:
    """Serve ``handlers`` as agents 0..n-1 on free ports and start the ``relay`` process on them."""
    ports = [free_port() for _ in handlers]
    async with AsyncExitStack() as stack:
        for handler, port in zip(handlers, ports, strict=True):
            await stack.enter_async_context(
                serve(handler, "127.0.0.1", port, compression=None, max_size=None)
            )
        agents = ",".join(f"{i}=extract@127.0.0.1:{p}" for i, p in enumerate(ports))
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "gaiamesh.bench.overhead.relays", relay, agents, str(workdir),
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            yield proc
        finally:
            await stack.aclose()  # closing the agents ends the floor; the mesh ends on its own
            await proc.wait()



if __name__ == "__main__":
    _main(sys.argv[1:])
