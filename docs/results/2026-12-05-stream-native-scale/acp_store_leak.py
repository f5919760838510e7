"""acp-sdk alone: one echo agent of the SDK's own ``Server``, in the SDK's own ``create_app``,
called by the SDK's own ``Client`` (in process, through ``httpx.ASGITransport``: no socket, so
what grows is the app's own work), one ``run_sync`` at a time. Two apps side by side in one
process, blocks alternated: one on the SDK's default store (``MemoryStore(limit=1000, ttl=1h)``,
what ``create_app`` makes when given none), one on ours (``gaiamesh.mesh.protocols.acp.store.KeyedStore``).

Prints, per block, the runs the app had served before it, the median ms of a request, the
process's CPU ms per request, and the Executor cancel-watch tasks still alive (the SDK's
``_watch_for_cancellation`` of every run ever started).

    PYTHONPATH=src python docs/results/2026-12-05-stream-native-scale/acp_store_leak.py [BLOCKS] [PER_BLOCK]
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from collections.abc import AsyncGenerator
from contextlib import AsyncExitStack
from datetime import timedelta

import httpx

from gaiamesh.mesh.protocols.acp.binding import JsonByDefault  # uvicorn's old name, before acp_sdk.server
from gaiamesh.mesh.protocols.acp.store import KeyedStore

from acp_sdk.server.store import MemoryStore  # isort: skip
from acp_sdk.client import Client  # isort: skip
from acp_sdk.models import Message, MessagePart
from acp_sdk.server import RunYield, RunYieldResume, Server, create_app

BODY = '{"packet": "' + "x" * 1400 + '"}'  # about a run's frame (1.5 KB)


STORES: dict[str, object] = {}  # name -> the app's store


def app(name: str) -> tuple[object, object]:
    server = Server()

    @server.agent(name="echo")
    async def echo(input: list[Message]) -> AsyncGenerator[RunYield, RunYieldResume]:
        yield MessagePart(content=input[0].parts[0].content, content_type="application/json")

    store = STORES[name] = KeyedStore() if name == "keyed" else MemoryStore(limit=1000, ttl=timedelta(hours=1))
    made = create_app(*server.agents, store=store)  # type: ignore[arg-type]  # memory: create_app's own default
    return made, JsonByDefault(made)


def watchers(name: str) -> int:
    """The app's Executors whose cancel watch is still alive (the task's Executor's store)."""
    alive = 0
    for t in asyncio.all_tasks():
        coro = t.get_coro()
        if not t.done() and "_watch_for_cancellation" in repr(coro):
            executor = coro.cr_frame.f_locals["self"]  # type: ignore[union-attr]
            alive += executor.cancel_store._store is STORES[name]
    return alive


async def block(client: Client, n: int) -> tuple[float, float]:
    times, cpu0 = [], time.process_time()
    message = Message(role="user", parts=[MessagePart(content=BODY, content_type="application/json")])
    for _ in range(n):
        t0 = time.perf_counter()
        await client.run_sync([message], agent="echo")
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), (time.process_time() - cpu0) * 1000 / n


async def main(blocks: int, per_block: int) -> None:
    print(f"# load {os.getloadavg()[0]:.2f} at start; {per_block} sequential run_sync per block")
    print("store | runs before | ms p50 | CPU ms/req | cancel watches alive")
    async with AsyncExitStack() as stack:
        clients = {}
        for name in ("memory", "keyed"):
            made, served = app(name)
            await stack.enter_async_context(made.router.lifespan_context(made))  # type: ignore[attr-defined]
            transport = httpx.ASGITransport(app=served)  # type: ignore[arg-type]
            clients[name] = await stack.enter_async_context(Client(base_url="http://acp", transport=transport))
        for b in range(blocks):
            for name, client in clients.items():
                ms, cpu = await block(client, per_block)
                print(f"{name} | {b * per_block} | {ms:.2f} | {cpu:.2f} | {watchers(name)}", flush=True)
    print(f"# load {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 6, int(sys.argv[2]) if len(sys.argv) > 2 else 200))
