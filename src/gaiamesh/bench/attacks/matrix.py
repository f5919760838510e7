"""``gaiamesh bench-attacks``: the matrix. Per column (a protocol on a transport, under a transport
security) its agents start as processes (model server, or replayed answers); a calm run is the
reference (after an untimed warm-up); then each wire attack runs the same task with the attacker
in front of one agent (``run.py``; natively ``native.py``), and each admission attack makes its own
attempt. Every cell is judged by the run's own records (``judge.py``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ...agents.teams import agent_specs
from ...deploy.local import ProcessGroup, model_server, own_team
from ...evaluation.metrics import RunMetrics
from ...mesh.protocols import KEYED, generate_keys
from ...settings import AgentSpec, Settings
from ...tasks import Task
from ..compare.rows import console
from ..compare.run import agents_running
from . import native
from .cells import Cells, lines_of
from .judge import WIRE, AttackRow, read_by_tap
from .judge import what_the_tap_read as tap_read
from .run import admission_cells, relayed, wire_cell
from .wiretap import Seen

SECURITY = {"none": "off", "tls": "tls", "mtls": "mtls"}  # the matrix's name -> WIRE_TLS
TARGET_TOOL = "extract"  # the agent attacked: it reads doc_init and answers search_docs


@dataclass(frozen=True)
class Column:
    """One column of the matrix: a protocol on a transport, under a transport security."""

    protocol: str
    transport: str = "relay"
    security: str = "none"

    @property
    def name(self) -> str:
        return self.protocol + ("/native" if self.transport == "native" else "") + (
            "" if self.security == "none" else f"+{self.security}")  # fmt: skip


def attack_protocol(settings: Settings, col: Column, task: Task, attacks: list[str], out: Path,
                    group: ProcessGroup, advance: Callable[[str], None]) -> list[AttackRow]:  # fmt: skip
    """The cells of one column: its own team, a calm run, then each attack."""
    protocol, security = col.protocol, col.security
    update = {"protocol": protocol, "transport": col.transport, "wire_tls": SECURITY[security]}
    if col.transport == "native":
        update["native_preload"] = protocol  # no run's first request pays for loading the SDK
    base = own_team(settings.model_copy(update=update))
    if protocol in KEYED or base.wire_tls != "off":
        nodes = ["network", *(a.node_id for a in agent_specs(base))]
        base = base.model_copy(update={"keys_dir": generate_keys(out / "keys", nodes)})
    target = next(a for a in agent_specs(base) if a.tool == TARGET_TOOL)
    with agents_running(base, group, protocol):
        _run(base, task, out / "warm-up")  # untimed: cold agents would cost the calm run
        cells = Cells(protocol, col.transport, security, _run(base, task, out / "calm"))
        tapped = Seen()
        # the tap runs always: the admission attacks replay what it captured
        for attack in [a for a in WIRE if a in attacks or a == "tap"]:
            advance(f"{col.name:<16} {attack}")
            if col.transport == "native":
                seen = native_wire_cell(cells, attack, base, task, target, out / attack)
            elif attack == "poison":
                cells.add(attack, "n/a", "the relay's wire has no directory to poison: AGENTS names each agent's address")
                continue
            elif attack == "crossproof" and security != "none":
                cells.add(attack, "n/a", "the upgrade request and its answer are inside TLS: nothing to rewrite")
                continue
            elif attack == "fallback" and (protocol == "json" or security != "none"):
                cells.add(attack, "n/a", "json is the weakest already" if protocol == "json" else
                          "the upgrade request is inside TLS: nothing to rewrite")  # fmt: skip
                continue
            else:
                seen = wire_cell(cells, attack, base, task, target, out / attack)
            tapped = seen if attack == "tap" else tapped
        admission_cells(cells, base, task, target, tapped, out, attacks, advance)
    return [r for r in cells.rows if r.attack in attacks]


NOT_NATIVE = {  # attacks not attempted on a protocol's own wire, and why
    "reorder": "HTTP/1.1 carries one request at a time on a connection; across connections the order is the "
               "protocol client's, not the wire's (not attempted)",
    "fallback": "natively a protocol is the path its requests go to, not a name offered at a handshake (not attempted)",
    "crossproof": "natively the hello names no protocol (its proof binds the hello, and each request is then judged "
                  "by its own protocol's rules): no proof of one protocol to offer under another (not attempted)",
}


def native_wire_cell(cells: Cells, attack: str, base: Settings, task: Task, target: AgentSpec, run_dir: Path) -> Seen:
    """A wire attack on the protocol's own wire (``attacks/native.py``), judged by the run's records."""
    if attack in NOT_NATIVE:
        cells.add(attack, "n/a", NOT_NATIVE[attack])
        return Seen()
    tamper = native.tamper_for(attack, base.replay_window_s)
    got = asyncio.run(native.through_attacker(base, task, target, tamper, run_dir))
    m, lines = got.metrics, lines_of(run_dir)
    if attack == "tap":
        bodies = [p for _, p in got.seen.frames]
        read, chunks, question, answer = tap_read(read_by_tap(bodies), task.doc, task.question, cells.calm.prediction)
        what = f"document {read}/{chunks} chunks, question {'yes' if question else 'no'}, answer {'yes' if answer else 'no'}"
        cells.add(attack, "succeeded" if read or question or answer else "blocked",
                  f"the tap read, in the HTTP bodies: {what}", (m, run_dir))  # fmt: skip
    else:
        cells.add(attack, *native.judge_native(attack, tamper, target.node_id, lines, got), (m, run_dir))
    return got.seen


def _run(settings: Settings, task: Task, run_dir: Path) -> RunMetrics:
    return asyncio.run(relayed(settings, task, run_dir))[0]


def columns_of(protocols: list[str], transports: tuple[str, ...], securities: tuple[str, ...]) -> list[Column]:
    """The matrix's columns: every protocol on the relay under each security, then on its own wire
    (WIRE_TLS is the relay's: a native wire's transport security is its protocol's own)."""
    cols = [Column(p, "relay", sec) for sec in securities for p in protocols] if "relay" in transports else []
    return cols + ([Column(p, "native") for p in protocols] if "native" in transports else [])


def run_attacks(settings: Settings, task: Task, columns: list[Column], attacks: list[str], out: Path) -> list[AttackRow]:
    """Every attack in every column on ``task``; the rows of ``attacks.csv``."""
    rows: list[AttackRow] = []
    group = ProcessGroup(out / "logs")
    bars = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    started = time.monotonic()
    try:
        with model_server(settings, group), Progress(*bars, console=console) as progress:
            bar = progress.add_task("attacks", total=len(columns) * len(set(attacks) | {"tap"}))

            def advance(what: str) -> None:
                progress.update(bar, description=what, advance=1)

            for col in columns:
                rows += attack_protocol(settings, col, task, attacks, out / "runs" / col.name.replace("/", "-"),
                                        group, advance)  # fmt: skip
    finally:
        group.stop_all()
    console.print(f"{len(rows)} cells in {time.monotonic() - started:.1f} s")
    return rows
