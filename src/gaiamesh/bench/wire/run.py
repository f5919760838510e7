"""``gaiamesh bench-wire``: the rounds. Every round measures every protocol at every peer count,
floor and ours one after the other, the side that goes first alternating from round to round
(the machine's drift then falls on both alike); round 0 is a warm-up and is discarded.

A block: the peers' clients open (their first request: a card, an initialize, a listing), then
every peer sends ``requests`` frames one after the other, all peers at once; the clock, the CPU
of both processes and the tap's bytes are read around those requests only, the connections
over the clients' whole life (until they close). The machine's load is read around each block
(``bench/load.py``).
"""

from __future__ import annotations

import asyncio
import datetime
import os
import platform
import tempfile
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path

from ...deploy.local import free_port_block
from ...errors import ConfigError, RunError
from ...mesh.native.tap import Tap
from ...settings import Settings, load_settings
from ..load import Load, LoadProbe
from ..tls.results import LoadRecord
from .floor import ECHO, FLOOR_PROTOCOLS, Send, floor_client
from .ours import ours_client
from .report import summarize, write
from .results import SIZES, Block, WireBench, payload
from .servers import SIDES, Served, ServerProcess, server_process

Progress = Callable[[str], None]


@dataclass
class _Bench:
    settings: Settings
    server: ServerProcess
    taps: dict[tuple[str, str], Tap]
    keys_dir: Path
    requests: int
    probe: LoadProbe
    progress: Progress
    blocks: list[Block] = field(default_factory=list)


def _clients(b: _Bench, protocol: str, side: str, peers: int) -> list[AbstractAsyncContextManager[Send]]:
    url = f"http://127.0.0.1:{b.taps[protocol, side].port}"
    if side == "floor":
        return [floor_client(protocol, url, b.keys_dir) for _ in range(peers)]
    return [ours_client(protocol, url, b.settings, peers, b.keys_dir) for _ in range(peers)]


async def _peer(send: Send, requests: int, peer: int, times: list[float], failed: list[str]) -> None:
    for i in range(requests):
        blob = payload(SIZES[(peer + i) % len(SIZES)], i)
        started = time.perf_counter()
        try:
            got = await send(blob)
        except Exception as exc:  # any SDK's own error: counted and said, the bench goes on
            failed.append(f"{type(exc).__name__}: {exc}"[:300])
            continue
        times.append((time.perf_counter() - started) * 1000)
        if got <= 0:
            failed.append("an empty answer")


@dataclass
class _Window:
    """What a block reads around its requests only: the clock, both processes' CPU, the tap."""

    bytes: int = 0
    http: int = 0
    cpu: float = 0.0
    server_ns: int = 0
    at: float = 0.0

    @classmethod
    async def read(cls, tap: Tap, server: ServerProcess) -> _Window:
        server_ns = await server.cpu_ns()
        return cls(_tap_bytes(tap), _tap_requests(tap), time.process_time(), server_ns, time.perf_counter())


async def _life(client: AbstractAsyncContextManager[Send], steps: asyncio.Barrier, run: _Run, k: int) -> None:
    """One peer: its client opens, waits for every other and for the block to read where its
    measures start, sends its frames, waits again until the block has read its measures, then
    closes. An error of its open breaks the barrier (the block cannot be measured); of its
    close, it is counted with the block's errors."""
    try:
        async with client as send:
            await steps.wait()  # every client open
            await steps.wait()  # the block has read where its measures start
            await _peer(send, run.requests, k, run.times, run.failed)
            await steps.wait()  # every request answered
            await steps.wait()  # the block has read its measures
    except asyncio.BrokenBarrierError:
        return
    except Exception as exc:  # the SDK client's own, opening or closing: said, the bench goes on
        run.failed.append(f"{type(exc).__name__}: {exc}"[:300])
        await steps.abort()


@dataclass
class _Run:
    requests: int
    times: list[float] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


async def _block(b: _Bench, protocol: str, side: str, peers: int, index: int) -> Block:
    tap = b.taps[protocol, side]
    first = len(tap.books.conns)
    run, steps, broken = _Run(b.requests), asyncio.Barrier(peers + 1), False
    async with asyncio.TaskGroup() as group:
        for k, client in enumerate(_clients(b, protocol, side, peers)):
            group.create_task(_life(client, steps, run, k))  # the clients open at once, as a team's would
        try:
            await steps.wait()
            b.probe.start()
            before = await _Window.read(tap, b.server)
            await steps.wait()
            await steps.wait()
            after = await _Window.read(tap, b.server)
            load = b.probe.stop()
            await steps.wait()
        except asyncio.BrokenBarrierError:
            broken = True  # raised below: in here the task group would wrap it
    if broken:
        raise RunError(
            f"bench-wire: a {protocol} client ({side}) failed: {run.failed[0] if run.failed else '?'}"
        )
    conns = [c for c in tap.books.conns[first:] if not c.refused]
    return Block(protocol=protocol, side=side, peers=peers, round=index, warmup=index == 0,
                 requests=peers * b.requests, errors=len(run.failed), error=run.failed[0] if run.failed else "",
                 ms=[round(t, 3) for t in run.times], seconds=round(after.at - before.at, 3),
                 client_cpu_ms=round((after.cpu - before.cpu) * 1000, 3),
                 server_cpu_ms=round((after.server_ns - before.server_ns) / 1e6, 3), bytes=after.bytes - before.bytes,
                 http_requests=after.http - before.http, connections=len(conns),
                 reused=sum(1 for c in conns if c.meter.requests > 1), load=_record(load))  # fmt: skip


def _tap_bytes(tap: Tap) -> int:
    return sum(c.up + c.down for c in tap.books.conns)


def _tap_requests(tap: Tap) -> int:
    return sum(c.meter.requests for c in tap.books.conns)


def _record(load: Load) -> LoadRecord:
    return LoadRecord(load_1m=load.load_1m, cpu_other=load.cpu_other, steal_pct=load.steal_pct,
                      containers=load.containers, seconds=load.seconds, contended=load.contended)  # fmt: skip


async def _rounds(b: _Bench, protocols: list[str], peers: list[int], rounds: int) -> None:
    for index in range(rounds + 1):
        for protocol in protocols:
            for n in peers:
                for side in SIDES if index % 2 == 0 else tuple(reversed(SIDES)):
                    b.progress(
                        f"round {index}{' (warm-up)' if index == 0 else ''}: {protocol} {side} x{n} peers"
                    )
                    b.blocks.append(await _block(b, protocol, side, n, index))


@dataclass
class _Taps:
    served: list[Served]
    taps: dict[tuple[str, str], Tap]


async def _start_taps(stack: AsyncExitStack, protocols: list[str]) -> _Taps:
    base = free_port_block(len(protocols) * len(SIDES), also=0)
    served, taps = [], {}
    for i, (protocol, side) in enumerate((p, s) for p in protocols for s in SIDES):
        tap = Tap("127.0.0.1", base + i)
        await tap.start()
        stack.push_async_callback(tap.close)
        taps[protocol, side] = tap
        served.append(Served(protocol, side, base + i, tap.port))
    return _Taps(served, taps)


@dataclass
class _Identity:
    settings: Settings
    clients: Path  # the keys the relay's clients read (anp: its DID host's folder)
    trust: Path | None  # the CAs the servers trust (anp: the DID host's local CA)


async def _identity(stack: AsyncExitStack, work: Path, protocols: list[str]) -> _Identity:
    """The relay's and the echo agent's keys in ``work``; for anp, also a local CA and the relay's
    DID host, run as the gateway runs it (``Binding.hosted``), for the floor and ours alike."""
    from ...mesh.frames import NETWORK_SRC
    from ...mesh.protocols import generate_keys

    settings = load_settings(keys_dir=work, anp_did_hostname="localhost")
    generate_keys(work, [NETWORK_SRC, ECHO])
    if "anp" not in protocols:
        return _Identity(settings, work, None)
    from ...mesh.localtls import issue_tls
    from ...mesh.native import binding

    trust = issue_tls(work, ["localhost"]).trust
    hosted = await stack.enter_async_context(binding("anp").hosted(settings))
    return _Identity(settings, hosted, trust)


async def _measure(work: Path, protocols: list[str], peers: list[int], requests: int, rounds: int,
                   progress: Progress) -> list[Block]:  # fmt: skip
    from ...mesh.native import pool

    async with AsyncExitStack() as stack:
        ids = await _identity(stack, work, protocols)
        made = await _start_taps(stack, protocols)
        server = await stack.enter_async_context(server_process(
            made.served, pool.server_keep_alive(ids.settings), work, work / "servers.log", ids.trust
        ))  # fmt: skip
        b = _Bench(ids.settings, server, made.taps, ids.clients, requests, LoadProbe(lambda: [os.getpid()]),
                   progress)  # fmt: skip
        await _rounds(b, protocols, peers, rounds)
        return b.blocks


def check(protocols: list[str], peers: list[int], requests: int, rounds: int) -> None:
    """Refuse what the bench cannot run, in the user's words (``ConfigError``)."""
    if unknown := [p for p in protocols if p not in FLOOR_PROTOCOLS]:
        raise ConfigError(f"bench-wire has no SDK floor for {', '.join(unknown)}; it measures "
                          f"{', '.join(FLOOR_PROTOCOLS)}")  # fmt: skip
    if not protocols:
        raise ConfigError("name at least one protocol")
    if not peers or min(peers) < 1 or requests < 1 or rounds < 1:
        raise ConfigError("peers, requests and rounds must each be at least 1")


def run_wire(out: Path, protocols: list[str], peers: list[int], requests: int, rounds: int,
             progress: Progress = lambda _: None) -> WireBench:  # fmt: skip
    """Measure, then write ``wire.json``, ``wire.csv``, ``wire.md`` and ``wire.png`` to ``out``."""
    check(protocols, peers, requests, rounds)
    started, t0 = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"), time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-wire-") as tmp:
        blocks = asyncio.run(_measure(Path(tmp), protocols, peers, requests, rounds, progress))
    result = WireBench(
        started=started, seconds=round(time.monotonic() - t0, 1), protocols=protocols, peers=peers,
        requests=requests, rounds=rounds, sizes=list(SIZES), machine=_machine(),
        contended_blocks=sum(1 for b in blocks if b.load.contended and not b.warmup),
        acp_store_ours=load_settings().acp_store,  # the servers' process reads the same (ours.py)
        rows=summarize(blocks), blocks=blocks,
    )  # fmt: skip
    write(result, out)
    return result


def _machine() -> dict[str, str]:
    return {"python": platform.python_version(), "cpus": str(os.cpu_count() or 0), "platform": platform.platform(),
            "load_1m_at_start": (Path("/proc/loadavg").read_text().split()[0])}  # fmt: skip
