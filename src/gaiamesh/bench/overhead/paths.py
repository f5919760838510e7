"""Each path a frame can take in ``bench-overhead``, timed: one loopback WebSocket, through a
relay process (:mod:`.relays`), and through Redis pub/sub (a ``redis-server`` started on a free
port); per-frame round trips and fan-out throughput to N subscribers."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve

from ...deploy.local import free_port
from ...mesh.frames import PacketType
from .relays import Handler, packet_bytes, run_id_of, serve_agents


# --- per-frame latency --------------------------------------------------------------------
async def plain_websocket(frames: int) -> list[float]:
    """Round trips over one loopback WebSocket: send a packet, the peer answers with one."""
    blob = packet_bytes("bench", "0", PacketType.SEARCH_DOCS)
    reply = packet_bytes("bench", "1", PacketType.EVENTS)

    async def echo(ws: ServerConnection) -> None:
        async for _ in ws:
            await ws.send(reply)

    port = free_port()
    samples = []
    async with (
        serve(echo, "127.0.0.1", port, compression=None),
        connect(f"ws://127.0.0.1:{port}", compression=None) as ws,
    ):
        for _ in range(frames):
            t0 = time.perf_counter()
            await ws.send(blob)
            await ws.recv()
            samples.append(time.perf_counter() - t0)
    return samples


async def through_relay(relay: str, frames: int, workdir: Path) -> list[float]:
    """Round trips agent 0 -> relay -> agent 1 -> relay -> agent 0 through ``relay``."""
    samples: list[float] = []
    done = asyncio.Event()

    async def sender(ws: ServerConnection) -> None:
        run_id = run_id_of(await ws.recv())
        blob = packet_bytes(run_id, "0", PacketType.SEARCH_DOCS)
        for _ in range(frames):
            t0 = time.perf_counter()
            await ws.send(blob)
            await ws.recv()  # agent 1's answer, relayed back
            samples.append(time.perf_counter() - t0)
        if relay == "mesh":
            await ws.send(packet_bytes(run_id, "0", PacketType.DATA_EVENT, frames + 1))
        done.set()
        await ws.wait_closed()

    async def echoer(ws: ServerConnection) -> None:
        reply = packet_bytes(run_id_of(await ws.recv()), "1", PacketType.EVENTS)
        async for message in ws:
            if b'"search_docs"' in message if isinstance(message, bytes) else '"search_docs"' in message:
                await ws.send(reply)

    async with serve_agents([sender, echoer], relay, workdir):
        await done.wait()
    return samples


def through_redis(frames: int) -> list[float] | str:
    """Round trips over Redis pub/sub (two channels), with a redis-server started here."""
    server = _redis_server()
    if isinstance(server, str):
        return server
    proc, port = server
    try:
        import redis

        client, peer = redis.Redis(port=port), redis.Redis(port=port)
        blob = packet_bytes("bench", "0", PacketType.SEARCH_DOCS)
        reply = packet_bytes("bench", "1", PacketType.EVENTS)
        to_peer, to_me = client.pubsub(), client.pubsub()
        to_peer.subscribe("to-peer")
        to_me.subscribe("to-me")
        for ps in (to_peer, to_me):
            ps.get_message(timeout=1)  # subscription confirmation
        samples = []
        for _ in range(frames):
            t0 = time.perf_counter()
            client.publish("to-peer", blob)
            msg = to_peer.get_message(timeout=5)
            while msg is None or msg["type"] != "message":
                msg = to_peer.get_message(timeout=5)
            peer.publish("to-me", reply)
            back = to_me.get_message(timeout=5)
            while back is None or back["type"] != "message":
                back = to_me.get_message(timeout=5)
            samples.append(time.perf_counter() - t0)
        return samples
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _redis_server() -> tuple[subprocess.Popen[bytes], int] | str:
    """A private redis-server on a free port, or why there is none."""
    binary = shutil.which("redis-server")
    if binary is None:
        return "skipped: redis-server is not installed (apt-get install redis-server)"
    try:
        import redis
    except ImportError:
        return "skipped: the redis Python package is not installed"
    port = free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(port=port)
    deadline = time.monotonic() + 10
    while True:
        try:
            client.ping()
            return proc, port
        except redis.ConnectionError:
            if time.monotonic() > deadline:
                proc.terminate()
                return "skipped: redis-server did not start"
            time.sleep(0.05)  # waiting for a child process to listen


# --- fan-out throughput -------------------------------------------------------------------
async def fanout_relay(relay: str, subscribers: int, frames: int, workdir: Path) -> float:
    """Frames per second from one publisher delivered to every one of ``subscribers`` agents."""
    got = [0] * subscribers
    all_in = asyncio.Event()
    stamps: dict[str, float] = {}

    async def publisher(ws: ServerConnection) -> None:
        run_id = run_id_of(await ws.recv())
        blob = packet_bytes(run_id, "0", PacketType.SEARCH_DOCS)
        stamps["first_sent"] = time.perf_counter()
        for _ in range(frames):
            await ws.send(blob)  # waits only when the relay stops reading (backpressure)
        await all_in.wait()
        if relay == "mesh":
            await ws.send(packet_bytes(run_id, "0", PacketType.DATA_EVENT, frames + 1))
        await ws.wait_closed()

    def subscriber(k: int) -> Handler:
        async def handler(ws: ServerConnection) -> None:
            await ws.recv()  # the start
            async for _ in ws:
                got[k] += 1
                if got[k] == frames and all(n >= frames for n in got):
                    stamps["last_received"] = time.perf_counter()
                    all_in.set()

        return handler

    async with serve_agents([publisher, *(subscriber(k) for k in range(subscribers))], relay, workdir):
        await all_in.wait()
    return frames / (stamps["last_received"] - stamps["first_sent"])


async def fanout_redis(subscribers: int, frames: int) -> float | str:
    """The same fan-out over Redis pub/sub: one publisher (pipelined), ``subscribers`` clients."""
    server = _redis_server()
    if isinstance(server, str):
        return server
    proc, port = server
    import redis.asyncio as aredis

    try:
        blob = packet_bytes("bench", "0", PacketType.SEARCH_DOCS)
        clients = [aredis.Redis(port=port) for _ in range(subscribers)]
        subs = [c.pubsub() for c in clients]
        for ps in subs:
            await ps.subscribe("fan")
        got = [0] * subscribers
        all_in = asyncio.Event()

        async def consume(k: int, ps: Any) -> None:
            async for message in ps.listen():
                if message["type"] == "message":
                    got[k] += 1
                    if got[k] == frames:
                        if all(n >= frames for n in got):
                            all_in.set()
                        return

        async with asyncio.TaskGroup() as tasks:
            for k, ps in enumerate(subs):
                tasks.create_task(consume(k, ps))
            pub = aredis.Redis(port=port)
            t0 = time.perf_counter()
            for start in range(0, frames, 100):  # pipelined: the publisher never waits a round trip
                pipe = pub.pipeline(transaction=False)
                for _ in range(min(100, frames - start)):
                    pipe.publish("fan", blob)
                await pipe.execute()
            await all_in.wait()
            elapsed = time.perf_counter() - t0
        for c in [pub, *clients]:
            await c.aclose()
        return frames / elapsed
    finally:
        proc.terminate()
        proc.wait(timeout=10)
