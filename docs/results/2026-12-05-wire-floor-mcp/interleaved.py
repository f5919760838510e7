"""mcp's client CPU, request by request: the SDK's own ``Client(url)`` (the floor's client) beside
ours, and ours with two other bridges under the SDK, each request of each client in turn against
the one floor server (bench-wire's, in its own process, behind the counting tap), so that a busy
machine's drift falls on all alike. Prints, per client, the median request and the bench
process's CPU a request (the client and the tap's counting).

    PYTHONPATH=src python docs/results/2026-12-05-wire-floor-mcp/interleaved.py 600

- ours: the code of this commit (``client.ThroughHttpx``: each httpx2 request made whole as an
  ``httpx.Request`` and sent by the relay's ``httpx.AsyncClient``);
- ours-build_request: the bridge before (``AsyncClient.build_request`` merging the client's
  headers and cookies into each request);
- ours-httpx2-transport: no bridge, httpx2's own transport under the SDK (what the bridge costs
  at most; the relay's pool, limits and request hooks would not apply).
"""

import asyncio
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

import httpx2

from gaiamesh.bench.wire.floor import MCP_PATH, floor_client
from gaiamesh.bench.wire.results import SIZES, payload
from gaiamesh.bench.wire.servers import Served, server_process
from gaiamesh.deploy.local import free_port_block
from gaiamesh.mesh.native import Peer, binding, pool
from gaiamesh.mesh.native.tap import Tap
from gaiamesh.mesh.protocols.mcp import client as mc
from gaiamesh.settings import load_settings


class BuildRequest(mc.ThroughHttpx):
    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        out = self.http.build_request(request.method, str(request.url), headers=request.headers.raw,
                                      content=await request.aread())  # fmt: skip
        response = await self.http.send(out, stream=True, follow_redirects=False)
        return httpx2.Response(response.status_code, headers=response.headers.raw,
                               stream=mc._Body(response, drain=request.method == "POST"),
                               extensions={"http_version": response.http_version.encode()})  # fmt: skip


class Httpx2Transport(mc.ThroughHttpx):
    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if not hasattr(self, "own"):
            self.own = httpx2.AsyncHTTPTransport()
        return await self.own.handle_async_request(request)


async def ours(url: str, stack: AsyncExitStack, bridge: type[mc.ThroughHttpx]):
    http = await stack.enter_async_context(pool.client(load_settings(), 1))
    client = binding("mcp").client(Peer(url, "echo", "interleaved", Path(".")), http)
    client.url = url  # the floor's endpoint, exactly (ours appends a slash for its own mount)
    kept, mc.ThroughHttpx = mc.ThroughHttpx, bridge  # the session's bridge is made at connect
    try:
        await client.connect()
    finally:
        mc.ThroughHttpx = kept
    stack.push_async_callback(client.aclose)

    async def send(blob: bytes) -> int:
        return sum([len(frame) async for frame in client.send(blob)])

    return send


async def main(n: int) -> None:
    async with AsyncExitStack() as stack:
        port = free_port_block(1, also=0)
        tap = Tap("127.0.0.1", port)
        await tap.start()
        stack.push_async_callback(tap.close)
        work = Path(tempfile.mkdtemp(prefix="interleaved-"))
        served = [Served("mcp", "floor", port, tap.port)]
        await stack.enter_async_context(server_process(served, 60, work, work / "servers.log"))
        root = f"http://127.0.0.1:{tap.port}"
        clients = {
            "floor (Client(url))": await stack.enter_async_context(floor_client("mcp", root)),
            "ours": await ours(root + MCP_PATH, stack, mc.ThroughHttpx),
            "ours-build_request": await ours(root + MCP_PATH, stack, BuildRequest),
            "ours-httpx2-transport": await ours(root + MCP_PATH, stack, Httpx2Transport),
        }
        times: dict[str, list[float]] = {name: [] for name in clients}
        cpu = dict.fromkeys(clients, 0.0)
        for i in range(n + 30):  # the first 30 rounds warm up
            blob = payload(SIZES[i % len(SIZES)], i)
            for name, send in clients.items():
                c0, t0 = time.process_time(), time.perf_counter()
                await send(blob)
                if i >= 30:
                    times[name].append((time.perf_counter() - t0) * 1000)
                    cpu[name] += time.process_time() - c0
        load = Path("/proc/loadavg").read_text().split()[:3]
        print(f"{n} requests per client, in turn; load after: {' '.join(load)}")
        for name in clients:
            print(f"{name:24s} median {statistics.median(times[name]):6.2f} ms   "
                  f"CPU {cpu[name] / n * 1000:.3f} ms a request")  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 600))
