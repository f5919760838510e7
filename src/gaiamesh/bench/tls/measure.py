"""The measurements of one mode in one round of ``bench-tls``: connects (wall time and both ends'
CPU), bytes at the socket through the counting proxy, and CPU per frame; and the frames sent."""

from __future__ import annotations

import asyncio
import statistics
import time

from websockets.asyncio.client import ClientConnection

from ...mesh.connect import connect_agent
from ...mesh.frames import make_packet
from ...mesh.protocols import get_adapter
from ...settings import AgentSpec, Settings
from .cpu import cpu_ns
from .proxy import CountingProxy, Tally
from .results import BYTES_FRAMES, CONNECT_DEADLINE_S, HANDSHAKES, IGNORED, SIZES, WARM_FRAMES


def frame(size: int) -> bytes:
    """A valid ``events`` packet (json) of exactly ``size`` bytes: a search agent ignores it."""
    adapter = get_adapter("json")

    def encoded(text: str) -> bytes:
        packet = make_packet(IGNORED, {"facts": [{"text": text, "score": 1.0}]}, run_id="tlscost", src="network", seq=1)
        return adapter.encode(packet.to_dict())

    pad = size - len(encoded(""))
    if pad < 0:
        raise ValueError(f"a frame cannot be smaller than {size - pad} bytes")
    return encoded("x" * pad)


async def _sync(ws: ClientConnection) -> None:
    """A ping's round trip: once the pong is back, every frame sent before it has crossed (the
    agent reads in order and parses the ping after them)."""
    await asyncio.wait_for(await ws.ping(), CONNECT_DEADLINE_S)


async def _connect(spec: AgentSpec, settings: Settings) -> ClientConnection:
    ws, _ = await connect_agent(spec, settings, time.monotonic() + CONNECT_DEADLINE_S)
    return ws


def _cipher(ws: ClientConnection) -> str:
    ssl_object = ws.transport.get_extra_info("ssl_object")
    if ssl_object is None:
        return ""
    name, version, _ = ssl_object.cipher()
    return f"{version} {name}"


# --- the measurements of one mode in one round ----------------------------------------------------
async def measure_connects(spec: AgentSpec, settings: Settings, pid: int, n: int) -> tuple[list[float], dict[str, float]]:
    """``n`` connects, each closed before the next: each one's wall time (ms), and both ends'
    CPU per connect and close (ms)."""
    walls = []
    relay0, agent0 = time.process_time(), cpu_ns(pid)
    for _ in range(n):
        t0 = time.perf_counter()
        ws = await _connect(spec, settings)
        walls.append((time.perf_counter() - t0) * 1e3)
        await ws.close()
    relay, agent = time.process_time() - relay0, cpu_ns(pid) - agent0
    return walls, {"connect_ms": statistics.median(walls), "connect_cpu_relay_ms": relay / n * 1e3,
                   "connect_cpu_agent_ms": agent / n / 1e6}  # fmt: skip


async def _frame_bytes(ws: ClientConnection, tally: Tally, blob: bytes, k: int) -> float:
    """Bytes each way per frame: ``k`` frames and a ping's round trip, less the round trip alone."""
    await _sync(ws)
    before = tally.total()
    await _sync(ws)
    ping = tally.total() - before
    before = tally.total()
    for _ in range(k):
        await ws.send(blob)
    await _sync(ws)
    return (tally.total() - before - ping) / k


async def measure_bytes(spec: AgentSpec, settings: Settings, proxy: CountingProxy) -> dict[str, float]:
    """Through ``proxy`` (``spec`` names it): a handshake's bytes each way and its close's
    (medians of :data:`HANDSHAKES`), then the bytes per frame of each size."""
    ups, downs, closes = [], [], []
    for _ in range(HANDSHAKES):
        ws = await _connect(spec, settings)
        tally = proxy.tallies[-1]  # connect_agent returned: every handshake byte has passed
        up, down = tally.up, tally.down
        await ws.close()
        await asyncio.wait_for(tally.done.wait(), CONNECT_DEADLINE_S)
        ups.append(up)
        downs.append(down)
        closes.append(tally.total() - up - down)
    out = {"handshake_up_B": statistics.median(ups), "handshake_down_B": statistics.median(downs),
           "close_B": statistics.median(closes)}  # fmt: skip
    ws = await _connect(spec, settings)
    try:
        for size in SIZES:
            out[f"frame_B_{size}"] = await _frame_bytes(ws, proxy.tallies[-1], frame(size), BYTES_FRAMES)
    finally:
        await ws.close()
    return out


async def _burst(ws: ClientConnection, blob: bytes, n: int) -> None:
    for _ in range(n):
        await ws.send(blob)
    await _sync(ws)


async def measure_cpu(spec: AgentSpec, settings: Settings, pid: int, n: int) -> tuple[dict[str, float], str]:
    """``n`` frames of each size over one connection: each end's CPU per frame (µs), and the
    cipher the connection negotiated."""
    ws = await _connect(spec, settings)
    out = {}
    try:
        for size in SIZES:
            blob = frame(size)
            await _burst(ws, blob, WARM_FRAMES)
            relay0, agent0 = time.process_time(), cpu_ns(pid)
            await _burst(ws, blob, n)
            out[f"cpu_relay_us_{size}"] = (time.process_time() - relay0) / n * 1e6
            out[f"cpu_agent_us_{size}"] = (cpu_ns(pid) - agent0) / n / 1e3
        return out, _cipher(ws)
    finally:
        await ws.close()

