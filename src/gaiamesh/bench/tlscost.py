"""``gaiamesh bench-tls``: what ``WIRE_TLS`` costs on the relay's wire, ``off`` beside ``tls`` and
``mtls``, measured side by side in one run against real agents.

The agents are three real ``MeshAgent`` s (tool ``search``, node ``0``), one per mode, served in
**one separate process** that the bench starts (``python -m gaiamesh.bench.tlscost``) and stops.
A separate process, not the bench's own event loop, because it is what a deployment has (the
relay and each agent are processes of their own) and because it keeps the two ends' CPU apart:
the relay's is the bench process's ``time.process_time()``, the agent's is read from
``/proc/<pid>/task/*/schedstat`` (ns; 10 ms ticks from ``/proc/<pid>/stat`` where a kernel has no
schedstat). The agent process skips ``check_model``: no model is ever asked, since every frame
the bench sends is an ``events`` packet, which a ``search`` agent decodes and ignores.

Each round measures every mode in turn, in an order rotated from round to round, and a first
round is a warm-up that is discarded. Per mode and round:

- **connect**: ``connect_agent`` (TCP, the TLS handshake, the WebSocket upgrade and the mesh
  token's admission) ``connects`` times, each closed before the next; its wall time one by one,
  and the CPU of both ends over the whole block (connect and close). Every connect is a full
  handshake: the relay resumes no TLS session.
- **bytes at the socket**: through a counting TCP proxy in front of the agent (:class:`CountingProxy`,
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
recorded beside each round (``load.py``). Results: ``tlscost.json``, ``tlscost.md``, ``tlscost.png``.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import gc
import json
import logging
import os
import platform
import random
import signal
import ssl
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import websockets
from pydantic import BaseModel, ConfigDict
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from websockets.asyncio.client import ClientConnection

from ..deploy.local import child_env, free_port_block
from ..errors import RunError
from ..mesh.admission import new_token
from ..mesh.connect import connect_agent
from ..mesh.frames import PacketType, make_packet
from ..mesh.protocols import generate_keys, get_adapter
from ..mesh.wiretls import WireTls
from ..settings import AgentSpec, Settings, load_settings
from .load import MIN_WINDOW_S, Load, LoadProbe, proc_stat

if TYPE_CHECKING:
    from matplotlib.axes import Axes

console = Console()

MODES: tuple[WireTls, ...] = ("off", "tls", "mtls")
REFERENCE: WireTls = "off"
SIZES = (400, 4096)  # frame payloads: a typical packet, and a large one (a document chunk set)
TOOL, NODE = "search", "0"
IGNORED = PacketType.EVENTS  # what the bench sends: a search agent decodes it and drops it
HANDSHAKES = 3  # proxied connects per mode and round: their bytes barely vary
BYTES_FRAMES = 20  # proxied frames per size, mode and round
WARM_FRAMES = 50  # frames sent untimed before each CPU burst (buffers, caches)
CONNECT_DEADLINE_S = 30.0
READY_TIMEOUT_S = 90.0  # the agent process imports the whole agent stack: slow on a busy machine
RESAMPLES = 2000
LEVEL = 0.95


@dataclass(frozen=True)
class MeasureDef:
    key: str
    label: str
    unit: str


MEASURES: tuple[MeasureDef, ...] = (
    MeasureDef("connect_ms", "connect_agent (TCP + TLS + upgrade + admission), wall", "ms"),
    MeasureDef("connect_cpu_relay_ms", "relay CPU per connect + close", "ms"),
    MeasureDef("connect_cpu_agent_ms", "agent CPU per connect + close", "ms"),
    MeasureDef("handshake_up_B", "handshake bytes, relay → agent", "B"),
    MeasureDef("handshake_down_B", "handshake bytes, agent → relay", "B"),
    MeasureDef("close_B", "close bytes, both ways", "B"),
    *(MeasureDef(f"frame_B_{s}", f"bytes per {s} B frame, both ways", "B") for s in SIZES),
    *(MeasureDef(f"cpu_relay_us_{s}", f"relay CPU per {s} B frame", "µs") for s in SIZES),
    *(MeasureDef(f"cpu_agent_us_{s}", f"agent CPU per {s} B frame", "µs") for s in SIZES),
)
Verdict = Literal["beyond noise", "within noise", "one round: no verdict"]


# --- the results file ---------------------------------------------------------------------------
class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Spread(_Model):
    median: float
    p10: float
    p90: float
    n: int


class Ratio(_Model):
    """A mode's value over ``off``'s, paired within each round: the median and its interval."""

    median: float
    low: float
    high: float
    rounds: int
    verdict: Verdict


class Measure(_Model):
    key: str
    label: str
    unit: str
    modes: dict[WireTls, Spread]
    ratios: dict[WireTls, Ratio]  # each mode but off, to off


class LoadRecord(_Model):
    load_1m: float
    cpu_other: float  # cores busy outside the bench (its own processes and the agent's excluded)
    steal_pct: float
    containers: int | None
    seconds: float
    contended: bool


class ModeRound(_Model):
    mode: WireTls
    connect_ms: list[float]  # each connect_agent, wall
    values: dict[str, float]  # every measure's value in this round (connect_ms: the round's median)
    cipher: str  # what the CPU connection negotiated ("" in the clear)


class Round(_Model):
    index: int
    warmup: bool
    order: list[WireTls]
    load: LoadRecord
    modes: list[ModeRound]


class Config(_Model):
    rounds: int  # measured, after one warm-up round
    connects: int
    messages: int
    sizes: list[int]
    handshakes: int
    bytes_frames: int
    protocol: str
    agent: str
    relay_cpu: str
    agent_cpu: str
    python: str
    openssl: str
    websockets: str
    cpus: int


class TlsCost(_Model):
    started: str
    seconds: float
    config: Config
    contended_rounds: int
    measures: list[Measure]
    rounds: list[Round]


# --- pure: order, spreads, ratios, noise ------------------------------------------------------
def order(round_index: int) -> list[WireTls]:
    """The modes of round ``round_index``, rotated so that each leads in turn (drift and warmth
    of the machine then fall on every mode alike)."""
    k = round_index % len(MODES)
    return [*MODES[k:], *MODES[:k]]


def spread(values: Sequence[float]) -> Spread:
    """Median and p10/p90 (linear interpolation; one value is its own spread)."""
    if not values:
        raise ValueError("no values to spread")
    if len(values) == 1:
        return Spread(median=values[0], p10=values[0], p90=values[0], n=1)
    cuts = statistics.quantiles(values, n=10, method="inclusive")
    return Spread(median=statistics.median(values), p10=cuts[0], p90=cuts[-1], n=len(values))


def median_interval(values: Sequence[float], resamples: int = RESAMPLES, seed: int = 0) -> tuple[float, float]:
    """A 95% percentile-bootstrap interval of the median of ``values`` (seeded: repeatable)."""
    rng = random.Random(seed)
    medians = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(resamples))
    tail = (1 - LEVEL) / 2
    return medians[int(tail * resamples)], medians[int((1 - tail) * resamples) - 1]


def verdict(low: float, high: float, rounds: int) -> Verdict:
    """Whether a ratio's interval tells it from 1 (one round has no spread to judge by)."""
    if rounds < 2:
        return "one round: no verdict"
    return "within noise" if low <= 1.0 <= high else "beyond noise"


def ratio(values: Sequence[float], reference: Sequence[float]) -> Ratio | None:
    """``values`` over ``reference``, round by round (the same round's pair), summarized; None
    without a pair whose reference is not 0."""
    pairs = [v / r for v, r in zip(values, reference, strict=True) if r]
    if not pairs:
        return None
    low, high = median_interval(pairs)
    return Ratio(median=statistics.median(pairs), low=low, high=high, rounds=len(pairs),
                 verdict=verdict(low, high, len(pairs)))  # fmt: skip


def _per_round(rounds: Sequence[Round], mode: WireTls, key: str) -> list[float]:
    return [m.values[key] for r in rounds for m in r.modes if m.mode == mode and key in m.values]


def _samples(rounds: Sequence[Round], mode: WireTls, key: str) -> list[float]:
    """What a mode's spread is of: every connect for the connect time, else one value a round."""
    if key == "connect_ms":
        return [x for r in rounds for m in r.modes if m.mode == mode for x in m.connect_ms]
    return _per_round(rounds, mode, key)


def summarize(rounds: Sequence[Round]) -> list[Measure]:
    """Every measure over the measured rounds (the warm-up is left out): each mode's spread and
    its paired ratio to ``off``."""
    measured = [r for r in rounds if not r.warmup]
    out = []
    for d in MEASURES:
        modes = {m: spread(s) for m in MODES if (s := _samples(measured, m, d.key))}
        base = _per_round(measured, REFERENCE, d.key)
        ratios = {m: got for m in MODES if m != REFERENCE
                  and (got := ratio(_per_round(measured, m, d.key), base)) is not None}  # fmt: skip
        out.append(Measure(key=d.key, label=d.label, unit=d.unit, modes=modes, ratios=ratios))
    return out


# --- pure: the report ---------------------------------------------------------------------------
def _num(v: float, unit: str) -> str:
    if unit == "ms":
        return f"{v:.2f}"
    if unit == "µs":
        return f"{v:.1f}"
    return f"{v:,.0f}" if v >= 100 else f"{v:.1f}"


def _cell(s: Spread | None, unit: str) -> str:
    if s is None:
        return "–"
    if s.p10 == s.p90:
        return _num(s.median, unit)
    return f"{_num(s.median, unit)} [{_num(s.p10, unit)}, {_num(s.p90, unit)}]"


def _ratio_cell(r: Ratio | None) -> str:
    if r is None:
        return "–"
    text = f"{r.median:.2f}× [{r.low:.2f}, {r.high:.2f}]"
    return text + (" (noise)" if r.verdict == "within noise" else "")


def table(measures: Sequence[Measure]) -> list[str]:
    """One row a measure: each mode's median [p10, p90], then each ratio to off."""
    others = [m for m in MODES if m != REFERENCE]
    lines = ["| measure | unit | " + " | ".join(MODES) + " | " + " | ".join(f"{m} / off" for m in others) + " |",
             "|---|---|" + "---|" * (len(MODES) + len(others))]  # fmt: skip
    for m in measures:
        cells = [_cell(m.modes.get(x), m.unit) for x in MODES] + [_ratio_cell(m.ratios.get(x)) for x in others]
        lines.append(f"| {m.label} | {m.unit} | " + " | ".join(cells) + " |")
    return lines


def _noise_lines(measures: Sequence[Measure]) -> list[str]:
    ratios = [r for m in measures for r in m.ratios.values()]
    if all(r.verdict == "one round: no verdict" for r in ratios):
        return ["One measured round: no spread to tell noise by (run more --rounds)."]
    said = [f"{m.label} under {mode}" for m in measures for mode, r in m.ratios.items() if r.verdict == "within noise"]
    if not said:
        return ["Every difference from off is beyond noise (its interval does not hold 1)."]
    return ["Within noise (the interval of the ratio holds 1; these rounds cannot tell it from off): "
            + "; ".join(said) + "."]  # fmt: skip


def _load_lines(result: TlsCost) -> list[str]:
    lines = ["| round | order | load 1m | other CPU, cores | steal % | contended |", "|---|---|---|---|---|---|"]
    for r in result.rounds:
        tag = f"{r.index} (warm-up, discarded)" if r.warmup else str(r.index)
        # other CPU left out where the round was too short for /proc's ticks to say it (load.py)
        other = f"{r.load.cpu_other:.2f}" if r.load.seconds >= MIN_WINDOW_S else "–"
        lines.append(f"| {tag} | {', '.join(r.order)} | {r.load.load_1m:.2f} | {other} | "
                     f"{r.load.steal_pct:.1f} | {'yes' if r.load.contended else 'no'} |")  # fmt: skip
    measured = sum(1 for r in result.rounds if not r.warmup)
    if result.contended_rounds:
        lines += ["", f"{result.contended_rounds} of {measured} measured rounds overlapped other load "
                  "(other processes kept ≥ 0.25 cores busy): times and CPU say something about that load too; "
                  "bytes do not depend on it."]  # fmt: skip
    return lines


def markdown(result: TlsCost) -> str:
    c = result.config
    lines = [
        "# What WIRE_TLS costs on the relay's wire",
        "",
        f"{result.started}, {result.seconds:.0f} s; {c.rounds} measured rounds after a warm-up, modes rotated "
        f"each round; {c.connects} connects and {c.messages} frames of each size per mode and round; protocol "
        f"{c.protocol}; {c.agent}. Python {c.python}, {c.openssl}, websockets {c.websockets}, {c.cpus} CPUs.",
        "",
        f"- relay CPU: {c.relay_cpu}",
        f"- agent CPU: {c.agent_cpu}",
        f"- bytes: TCP payload at a counting proxy in front of the agent ({c.handshakes} handshakes and "
        f"{c.bytes_frames} frames of each size per mode and round); a frame's bytes are its payload, its "
        "WebSocket header and mask, and under TLS its record's header and tag.",
        "",
        "Medians [p10, p90] over rounds (connect time: over every connect); ratios to off are paired within "
        "each round, median [95% bootstrap interval] over rounds.",
        "",
        *table(result.measures),
        "",
        *_noise_lines(result.measures),
        "",
        "## The machine during each round",
        "",
        *_load_lines(result),
    ]
    return "\n".join(lines) + "\n"


def _bars(ax: Axes, groups: list[str], cells: dict[WireTls, list[Spread | None]], title: str,
          less: Sequence[float] = ()) -> None:  # fmt: skip
    """One bar a mode in each group: the median (less ``less[i]``), whiskers at p10 and p90."""
    width = 0.8 / len(MODES)
    for i, mode in enumerate(MODES):
        xs = [g + (i - (len(MODES) - 1) / 2) * width for g in range(len(groups))]
        got = [c or Spread(median=0.0, p10=0.0, p90=0.0, n=0) for c in cells[mode]]
        base = list(less) or [0.0] * len(got)
        ax.bar(xs, [c.median - b for c, b in zip(got, base, strict=True)], width, label=mode,
               yerr=[[c.median - c.p10 for c in got], [c.p90 - c.median for c in got]], capsize=2)  # fmt: skip
    ax.set_xticks(range(len(groups)), groups)
    ax.set_title(title)
    ax.legend()


def plot(result: TlsCost, path: Path) -> None:
    """Four panels: connect time, handshake bytes, wire bytes a frame adds, CPU per frame; each
    bar a median with whiskers at p10 and p90."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by = {m.key: m for m in result.measures}

    def cells(keys: list[str]) -> dict[WireTls, list[Spread | None]]:
        return {mode: [by[k].modes.get(mode) for k in keys] for mode in MODES}

    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    (a, b), (c, d) = axes
    _bars(a, ["wall", "relay CPU", "agent CPU"], cells(["connect_ms", "connect_cpu_relay_ms", "connect_cpu_agent_ms"]),
          "a connect (and its close, for CPU), ms")  # fmt: skip
    _bars(b, ["relay → agent", "agent → relay", "close"], cells(["handshake_up_B", "handshake_down_B", "close_B"]),
          "handshake bytes at the socket")  # fmt: skip
    _bars(c, [f"{s} B" for s in SIZES], cells([f"frame_B_{s}" for s in SIZES]),
          "bytes a frame adds beyond its payload", less=SIZES)  # fmt: skip
    cpu = [f"cpu_{who}_us_{s}" for who in ("relay", "agent") for s in SIZES]
    _bars(d, [f"{k.split('_')[1]} {k.rsplit('_', 1)[1]} B" for k in cpu], cells(cpu), "CPU per frame, µs")
    fig.suptitle("Gaia Mesh: the cost of WIRE_TLS, off / tls / mtls side by side")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --- the wire: frames, a counting proxy, the agent's CPU ----------------------------------------
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


@dataclass
class Tally:
    """The TCP payload one proxied connection carried each way, so far."""

    up: int = 0  # relay -> agent
    down: int = 0  # agent -> relay
    done: asyncio.Event = field(default_factory=asyncio.Event)  # both ways have ended

    def total(self) -> int:
        return self.up + self.down


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, count: Callable[[int], None]) -> None:
    with contextlib.suppress(ConnectionError):
        while data := await reader.read(65536):
            count(len(data))  # counted before it is forwarded: the peer cannot see it uncounted
            writer.write(data)
            await writer.drain()
    with contextlib.suppress(OSError, RuntimeError):
        writer.write_eof()


class CountingProxy:
    """A TCP proxy on a free loopback port in front of the agent on ``agent_port``: it forwards
    every connection unchanged and counts its bytes each way (one :class:`Tally` a connection)."""

    def __init__(self, agent_port: int) -> None:
        self.agent_port = agent_port
        self.tallies: list[Tally] = []
        self.port = 0
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> CountingProxy:
        self._server = await asyncio.start_server(self._carry, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()

    async def _carry(self, relay_r: asyncio.StreamReader, relay_w: asyncio.StreamWriter) -> None:
        tally = Tally()
        self.tallies.append(tally)
        try:
            agent_r, agent_w = await asyncio.open_connection("127.0.0.1", self.agent_port)
        except OSError:
            relay_w.close()
            tally.done.set()
            return
        up: Callable[[int], None] = lambda n: setattr(tally, "up", tally.up + n)  # noqa: E731
        down: Callable[[int], None] = lambda n: setattr(tally, "down", tally.down + n)  # noqa: E731
        try:
            await asyncio.gather(_pump(relay_r, agent_w, up), _pump(agent_r, relay_w, down))
        finally:
            agent_w.close()
            relay_w.close()
            tally.done.set()


def schedstat_ns(text: str) -> int:
    """The CPU time a thread has run, in ns: the first field of ``/proc/<pid>/task/<tid>/schedstat``."""
    return int(text.split()[0])


def cpu_ns(pid: int) -> int:
    """Process ``pid``'s CPU time in ns: the sum over its threads' schedstat, or (a kernel without
    schedstat) its user and system ticks."""
    tasks = Path(f"/proc/{pid}/task")
    if (tasks.parent / "schedstat").exists():
        total = 0
        for task in tasks.iterdir():
            with contextlib.suppress(OSError, ValueError, IndexError):  # a thread that just ended
                total += schedstat_ns((task / "schedstat").read_text())
        return total
    ticks = proc_stat((tasks.parent / "stat").read_text())[1]
    return ticks * 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def cpu_source(pid: int) -> str:
    if Path(f"/proc/{pid}/schedstat").exists():
        return "the agent process, from /proc/<pid>/task/*/schedstat (ns)"
    return "the agent process, from /proc/<pid>/stat (10 ms ticks: coarse per frame)"


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


# --- the agent process -------------------------------------------------------------------------
def _relay_settings(work: Path, ports: dict[WireTls, int]) -> Settings:
    keys = generate_keys(work / "keys", ["network", NODE])  # the bench's own CA: never the project's keys
    agents = ",".join(f"{NODE}={TOOL}@127.0.0.1:{p}" for p in ports.values())
    return load_settings(agents=agents, keys_dir=keys, mesh_token=new_token(), protocol="json", wire_tls="off",
                         workspace_root=work / "ws", connect_timeout=CONNECT_DEADLINE_S)  # fmt: skip


@contextlib.asynccontextmanager
async def agent_process(settings: Settings, ports: dict[WireTls, int], log: Path) -> AsyncIterator[int]:
    """The agents of every mode in one process of their own, until the block ends; yields its pid."""
    spec = ",".join(f"{m}={p}" for m, p in ports.items())
    with log.open("wb") as err:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "gaiamesh.bench.tlscost", "--serve-agents", spec,
            env=child_env(settings), stdout=asyncio.subprocess.PIPE, stderr=err,
        )  # fmt: skip
    try:
        assert proc.stdout is not None
        try:
            line = await asyncio.wait_for(proc.stdout.readline(), READY_TIMEOUT_S)
        except TimeoutError:
            line = b""
        if line.strip() != b"ready":
            raise RunError(f"the bench's agent process did not start: {log.read_text(errors='replace')[-2000:]}")
        yield proc.pid
    finally:
        if proc.returncode is None:
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), 10)
            except TimeoutError:
                proc.kill()
                await proc.wait()


async def _serve_agents(ports: dict[WireTls, int]) -> None:
    """The child's side: one MeshAgent a mode (the same node, each with its own port and TLS),
    until SIGTERM. ``ready`` on standard output once all of them listen."""
    from ..agents.agent import MeshAgent
    from ..agents.catalog import get_tool

    base = load_settings()  # the parent's settings, from the environment child_env wrote
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    agents = [MeshAgent(base.model_copy(update={"wire_tls": m, "port": p, "node_id": NODE, "tool": TOOL,
                                                "workspace_root": Path(base.workspace_root) / m}), get_tool(TOOL))
              for m, p in ports.items()]  # fmt: skip
    async with asyncio.TaskGroup() as tasks:
        for agent in agents:
            tasks.create_task(agent.serve(stop))
        await asyncio.gather(*(a.listening.wait() for a in agents))
        _freeze()
        print("ready", flush=True)


def _child_main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] != "--serve-agents":
        print("usage: python -m gaiamesh.bench.tlscost --serve-agents off=PORT,tls=PORT,mtls=PORT", file=sys.stderr)
        return 2
    # warnings only: a log line per connection would be the agent's CPU, not TLS's
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    ports: dict[WireTls, int] = {}
    for item in argv[1].split(","):
        name, port = item.split("=")
        mode = next((m for m in MODES if m == name), None)
        if mode is None:
            print(f"unknown mode {name!r}; choose from {', '.join(MODES)}", file=sys.stderr)
            return 2
        ports[mode] = int(port)
    asyncio.run(_serve_agents(ports))
    return 0


# --- the run -------------------------------------------------------------------------------------
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


def _freeze() -> None:
    """Out of the collector's sight: everything alive now (imports, agents, settings), so that a
    full collection in a burst walks only what was made since (the module docstring)."""
    gc.collect()  # garbage left now would be kept for good once frozen
    gc.freeze()


async def _rounds(b: _Bench, rounds: int, connects: int, messages: int) -> list[Round]:
    _freeze()
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


def read(path: Path) -> TlsCost:
    """A ``tlscost.json`` back, checked against the models."""
    return TlsCost.model_validate(json.loads(path.read_text()))


if __name__ == "__main__":  # the bench's agent process (agent_process starts it)
    raise SystemExit(_child_main(sys.argv[1:]))
