"""What ``bench-tls`` measures and writes: its modes, sizes and measures, and the models of
``tlscost.json`` (each mode's spread, each ratio to ``off``, every round with the machine's load)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ...mesh.frames import PacketType
from ...mesh.wiretls import WireTls

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


def read(path: Path) -> TlsCost:
    """A ``tlscost.json`` back, checked against the models."""
    return TlsCost.model_validate(json.loads(path.read_text()))

