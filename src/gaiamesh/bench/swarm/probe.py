"""The probe of ``gaiamesh bench-swarm-latency`` (``swarm/latency.py``): round trips to agents,
timed where it runs.

It is piped to ``python3 -`` in the network service's container, so it may import only what
that image has (the standard library, websockets, the image's own gaiamesh), and it reads its
settings as JSON from ``argv[1]`` and prints its samples as JSON: ``{"samples": [{"ping":
[ms, ...], "frame": [...], "health": [...]}, ...], "frame_size": bytes}``, one entry per target.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Sequence
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

from gaiamesh.mesh.admission import relay_headers
from gaiamesh.mesh.frames import PacketType, make_packet
from gaiamesh.mesh.payloads import SubTaskResult
from gaiamesh.mesh.protocols import get_adapter
from gaiamesh.mesh.subprotocols import subprotocol
from gaiamesh.settings import load_settings

PROTOCOL = "json"  # the stack's default PROTOCOL; the frame is encoded as the relay would
KINDS = ("ping", "frame", "health")
READY_POLL_S = 0.5  # between /health attempts while an agent starts (it listens after its model check)


def frame(size: int) -> bytes:
    """A ``result`` packet of ``size`` bytes on the wire (at least its bare envelope's). Every
    agent decodes it and drops it, since no sub-task of its waits for it: it costs the agent a
    frame's decoding, and no model call and no file."""
    adapter = get_adapter(PROTOCOL)

    def encoded(pad: int) -> bytes:
        result = SubTaskResult(sub_task_id="latency-probe", parent_task_id="latency-probe",
                               worker_agent_role="probe", status="COMPLETED", result_data="x" * pad)  # fmt: skip
        packet = make_packet(PacketType.RESULT, result, run_id="latency-probe", src="network", seq=1,
                             question="latency probe")  # fmt: skip
        return adapter.encode(packet.to_dict())

    return encoded(max(0, size - len(encoded(0))))


async def health(address: str, port: int) -> bool:
    """A new connection, GET /health, the whole answer, the close: whether it said 200."""
    reader, writer = await asyncio.open_connection(address, port)
    try:
        writer.write(f"GET /health HTTP/1.1\r\nHost: {address}:{port}\r\nConnection: close\r\n\r\n".encode())
        await writer.drain()
        answer = await reader.read()  # the agent closes the connection after its answer
    finally:
        writer.close()
    return answer.startswith(b"HTTP/1.1 200")


async def ready(address: str, port: int, limit_s: float) -> None:
    """Until the agent answers /health: a replica just started listens only once its model
    server has answered."""
    deadline = time.monotonic() + limit_s
    while True:
        try:
            if await health(address, port):
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"{address}:{port} did not answer /health in {limit_s:.0f} s")
        await asyncio.sleep(READY_POLL_S)  # polling: the agent gives no signal when it listens


async def ping(ws: ClientConnection, blob: bytes | None) -> float:
    """Milliseconds from sending (``blob``, then) a ping (websockets' 4 random bytes) to its pong."""
    t0 = time.perf_counter()
    if blob is not None:
        await ws.send(blob)
    pong = await ws.ping()
    await pong
    return (time.perf_counter() - t0) * 1000


async def timed_health(address: str, port: int) -> float:
    t0 = time.perf_counter()
    if not await health(address, port):
        raise RuntimeError(f"{address}:{port} answered /health with no 200")
    return (time.perf_counter() - t0) * 1000


async def measure(targets: Sequence[tuple[str, int]], count: int, warmup: int, blob: bytes,
                  ready_timeout: float) -> list[dict[str, list[float]]]:  # fmt: skip
    """``count`` round trips of each kind to each target, after ``warmup`` unrecorded ones,
    one at a time, going round the targets in turn so that the machine's other load falls on
    each alike."""
    for address, port in targets:
        await ready(address, port, ready_timeout)
    # the stack's agents answer only a relay of their mesh: the probe proves the token as one
    token = load_settings().mesh_token
    conns = [await connect(f"ws://{a}:{p}/ws", subprotocols=[subprotocol(PROTOCOL)], compression=None,
                           ping_interval=None, max_size=None, additional_headers=relay_headers(token))
             for a, p in targets]  # fmt: skip
    samples: list[dict[str, list[float]]] = [{"ping": [], "frame": [], "health": []} for _ in targets]
    try:
        for i in range(warmup + count):
            # The kinds take turns at going first: the first round trip to an agent after a
            # pause finds its process asleep, and would otherwise always be the same kind's.
            kinds = KINDS[i % len(KINDS):] + KINDS[: i % len(KINDS)]
            for (address, port), ws, got in zip(targets, conns, samples, strict=True):
                for kind in kinds:
                    ms = await (timed_health(address, port) if kind == "health" else
                                ping(ws, blob if kind == "frame" else None))  # fmt: skip
                    if i >= warmup:
                        got[kind].append(round(ms, 4))
    finally:
        for ws in conns:
            await ws.close()
    return samples


def main(argv: Sequence[str]) -> None:
    config: dict[str, Any] = json.loads(argv[1])
    blob = frame(config["frame_bytes"])
    targets = [(a, int(p)) for a, p in config["targets"]]
    samples = asyncio.run(measure(targets, config["count"], config["warmup"], blob, config["ready_timeout"]))
    print(json.dumps({"samples": samples, "frame_size": len(blob)}))


if __name__ == "__main__":
    main(sys.argv)
