"""``gaiamesh bench-tls``: what ``WIRE_TLS`` costs on the relay's wire, ``off`` beside ``tls`` and
``mtls``, measured side by side in one run against real agents.

The agents are three real ``MeshAgent`` s (tool ``search``, node ``0``), one per mode, served in
**one separate process** that the bench starts (``python -m gaiamesh.bench.tls.agents``,
``agents.py``) and stops. A separate process, not the bench's own event loop, because it is what
a deployment has (the relay and each agent are processes of their own) and because it keeps the
two ends' CPU apart: the relay's is the bench process's ``time.process_time()``, the agent's is
read from ``/proc/<pid>/task/*/schedstat`` (ns; 10 ms ticks from ``/proc/<pid>/stat`` where a
kernel has no schedstat; ``cpu.py``). The agent process skips ``check_model``: no model is ever asked, since every frame
the bench sends is an ``events`` packet, which a ``search`` agent decodes and ignores.

Each round measures every mode in turn, in an order rotated from round to round, and a first
round is a warm-up that is discarded. Per mode and round:

- **connect**: ``connect_agent`` (TCP, the TLS handshake, the WebSocket upgrade and the mesh
  token's admission) ``connects`` times, each closed before the next; its wall time one by one,
  and the CPU of both ends over the whole block (connect and close). Every connect is a full
  handshake: the relay resumes no TLS session.
- **bytes at the socket**: through a counting TCP proxy in front of the agent (``proxy.py``,
  it forwards and counts TCP payload each way): a handshake's bytes (until ``connect_agent``
  returns) and its close's, then the bytes per frame of 400 B and 4 KB payloads sent with
  ``ws.send(bytes)`` (one frame per send, as an agent answers; a ping's round trip, counted
  alone and taken off, tells when every frame has passed). The proxy is on this path only: the
  connect and CPU figures go straight to the agent.
- **CPU per message**: ``messages`` frames of each size over an established connection, then a
  ping's round trip; the relay's CPU and the agent's over that, per frame. The frames are
  encoded before the clock starts: this is the wire's cost (websockets and TLS), not a protocol's.

Both processes freeze their start-up heap (``gc.freeze()``) once everything is imported and
listening: a full collection of the agent process's ~125,000 start-up objects takes ~65 ms (2 cores,
busy), falls into a burst at random and is no cost of TLS; what each frame allocates is still
collected, and counted.

Figures are medians over the measured rounds with p10/p90 (connect time: over every connect);
each ratio to ``off`` is taken within a round, then its median over rounds with a 95% bootstrap
interval, and a ratio whose interval holds 1 is said to be within noise. The machine's load is
recorded beside each round (``bench/load.py``). Results: ``tlscost.json``, ``tlscost.md``, ``tlscost.png``.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import gc
import os
import platform
import ssl
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import websockets
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ...deploy.local import free_port_block
from ...mesh.admission import new_token
from ...mesh.protocols import generate_keys
from ...mesh.wiretls import WireTls
from ...settings import AgentSpec, Settings, load_settings
from ..load import Load, LoadProbe
from .agents import agent_process, freeze
from .cpu import cpu_source
from .measure import measure_bytes, measure_connects, measure_cpu
from .plot import plot
from .proxy import CountingProxy
from .report import markdown
from .results import (
    BYTES_FRAMES,
    CONNECT_DEADLINE_S,
    HANDSHAKES,
    MODES,
    NODE,
    SIZES,
    TOOL,
    Config,
    LoadRecord,
    ModeRound,
    Round,
    TlsCost,
)
from .summary import order, summarize

console = Console()


def _relay_settings(work: Path, ports: dict[WireTls, int]) -> Settings:
    keys = generate_keys(work / "keys", ["network", NODE])  # the bench's own CA: never the project's keys
    agents = ",".join(f"{NODE}={TOOL}@127.0.0.1:{p}" for p in ports.values())
    return load_settings(agents=agents, keys_dir=keys, mesh_token=new_token(), protocol="json", wire_tls="off",
                         workspace_root=work / "ws", connect_timeout=CONNECT_DEADLINE_S)  # fmt: skip



@dataclass
class _Bench:
    settings: dict[WireTls, Settings]
    direct: dict[WireTls, AgentSpec]
    proxied: dict[WireTls, AgentSpec]
    proxies: dict[WireTls, CountingProxy]
    pid: int


async def _mode_round(b: _Bench, mode: WireTls, connects: int, messages: int) -> ModeRound:
    s = b.settings[mode]
    walls, values = await measure_connects(b.direct[mode], s, b.pid, connects)
    values |= await measure_bytes(b.proxied[mode], s, b.proxies[mode])
    cpu, cipher = await measure_cpu(b.direct[mode], s, b.pid, messages)
    return ModeRound(mode=mode, connect_ms=[round(w, 4) for w in walls], values=values | cpu, cipher=cipher)


def _load(load: Load) -> LoadRecord:
    return LoadRecord(load_1m=load.load_1m, cpu_other=load.cpu_other, steal_pct=load.steal_pct,
                      containers=load.containers, seconds=load.seconds, contended=load.contended)  # fmt: skip


async def _rounds(b: _Bench, rounds: int, connects: int, messages: int) -> list[Round]:
    freeze()
    try:
        return await _each_round(b, rounds, connects, messages)
    finally:
        gc.unfreeze()  # the caller's process (a test's, the CLI's) goes on as it was


async def _each_round(b: _Bench, rounds: int, connects: int, messages: int) -> list[Round]:
    probe = LoadProbe(lambda: [os.getpid()])  # the agent process descends from the bench
    done: list[Round] = []
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    # no auto-refresh: its thread's CPU would be counted as the relay's
    with Progress(*columns, console=console, auto_refresh=False, transient=True) as progress:
        bar = progress.add_task("tls cost", total=(rounds + 1) * len(MODES))
        for k in range(rounds + 1):
            probe.start()
            modes = []
            for mode in order(k):
                progress.update(bar, description=f"round {k}{' (warm-up)' if k == 0 else ''}: {mode:<4}")
                progress.refresh()
                modes.append(await _mode_round(b, mode, connects, messages))
                progress.advance(bar)
            done.append(Round(index=k, warmup=k == 0, order=order(k), load=_load(probe.stop()), modes=modes))
        progress.refresh()
    return done


async def _measure(work: Path, rounds: int, connects: int, messages: int) -> tuple[list[Round], Settings, str]:
    base = free_port_block(len(MODES))  # each agent's native port (port + NATIVE_PORT_OFFSET) free too
    ports: dict[WireTls, int] = {m: base + i for i, m in enumerate(MODES)}
    settings = _relay_settings(work, ports)
    async with contextlib.AsyncExitStack() as stack:
        pid = await stack.enter_async_context(agent_process(settings, ports, work / "agents.log"))
        proxies = {m: await stack.enter_async_context(CountingProxy(p)) for m, p in ports.items()}
        b = _Bench(
            settings={m: settings.model_copy(update={"wire_tls": m}) for m in MODES},
            direct={m: AgentSpec(NODE, TOOL, "127.0.0.1", p) for m, p in ports.items()},
            proxied={m: AgentSpec(NODE, TOOL, "127.0.0.1", proxies[m].port) for m in MODES},
            proxies=proxies,
            pid=pid,
        )
        return await _rounds(b, rounds, connects, messages), settings, cpu_source(pid)


def _config(rounds: int, connects: int, messages: int, settings: Settings, agent_cpu: str) -> Config:
    return Config(
        rounds=rounds, connects=connects, messages=messages, sizes=list(SIZES), handshakes=HANDSHAKES,
        bytes_frames=BYTES_FRAMES, protocol=settings.protocol,
        agent=f"a real MeshAgent (tool {TOOL}) per mode, in one process of its own",
        relay_cpu="the bench process's process_time(): connect_agent, websockets and TLS on the relay's side",
        agent_cpu=agent_cpu, python=platform.python_version(), openssl=ssl.OPENSSL_VERSION,
        websockets=websockets.__version__, cpus=os.cpu_count() or 0,
    )  # fmt: skip


def run_tlscost(out: Path, rounds: int = 5, connects: int = 200, messages: int = 2000) -> TlsCost:
    """Measure, then write ``tlscost.json``, ``tlscost.md`` and ``tlscost.png`` to ``out``."""
    if rounds < 1 or connects < 1 or messages < 1:
        raise ValueError("rounds, connects and messages must each be at least 1")
    started, t0 = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"), time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tlscost-") as tmp:
        done, settings, agent_cpu = asyncio.run(_measure(Path(tmp), rounds, connects, messages))
    result = TlsCost(
        started=started, seconds=round(time.monotonic() - t0, 1),
        config=_config(rounds, connects, messages, settings, agent_cpu),
        contended_rounds=sum(1 for r in done if r.load.contended and not r.warmup),
        measures=summarize(done), rounds=done,
    )  # fmt: skip
    write(result, out)
    return result


def write(result: TlsCost, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "tlscost.json").write_text(result.model_dump_json(indent=2) + "\n")
    (out / "tlscost.md").write_text(markdown(result))
    plot(result, out / "tlscost.png")


