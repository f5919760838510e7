"""``gaiamesh bench-flood``: one agent floods the relay with frames while the others work.

The ``reason`` agent is replaced by a flooder (its own process, so it does not share the relay's
CPU time slice) that, from the moment ``doc_init`` arrives, sends as fast as the relay reads a
mix of valid frames and bad ones: malformed, oversized, badly signed, spoofed, stale and of an
unknown type (the ``signed`` protocol, so that signatures are checked). The three honest agents
answer the task with the real model meanwhile. When the flood ends and the honest ``triples``
have come, the flooder sends the final answer. The relay runs in this process; the run is
measured against a calm one (no flood) on the same agents:

- frames per second the relay took in (and rejected) from the flooder;
- the honest agents' time from ``doc_init`` to ``triples``, calm and under the flood;
- this process's memory (RSS) before and after, and its peak;
- that every frame the flooder sent is in the frame log, each bad one rejected with its
  reason, and that the counters equal the log (``gaiamesh audit``).
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from websockets.asyncio.server import ServerConnection, serve

from ...agents.teams import default_agents, lineup
from ...deploy.local import ProcessGroup, free_port_block, model_server
from ...evaluation.audit import audit
from ...evaluation.finish import run_and_finish
from ...evaluation.metrics import read_log
from ...evaluation.modeltime import archived_memories, model_time
from ...mesh.frames import Announcement, PacketType, make_packet
from ...mesh.protocols import canonical_json, generate_keys, get_adapter
from ...mesh.records import FrameRecord
from ...mesh.relay import MeshNetwork
from ...mesh.routing import RoutingMode
from ...mesh.subprotocols import subprotocol
from ...settings import Settings
from ...tasks import Task

console = Console(stderr=True)
FLOODER = "3"  # the reason agent's node id in the default lineup
KINDS = ("valid", "malformed", "oversized", "bad_signature", "spoofed", "stale", "unknown_type")
# What the relay's rejection says for each bad kind (a prefix of its error).
REJECTED_AS = {
    "malformed": "signed: unsigned frame or bad magic",
    "oversized": "oversized frame",
    "bad_signature": "signed: bad signature",
    "spoofed": "signed: packet src",
    "stale": "packet belongs to run",
    "unknown_type": "unknown packet type",
}


def _event(run_id: str, seq: int, final: bool, **over: Any) -> dict[str, Any]:
    payload = {"answer": "flood", "method": "flood", "question": "?", "reading": "flood", "candidates": [],
               "facts_used": 0, "triples_seen": 0}  # fmt: skip
    fields: dict[str, Any] = {"run_id": run_id, "src": FLOODER, "seq": seq, "token_used": 0}
    if final:
        fields["tag"] = "final_answer"
    packet = make_packet(PacketType.DATA_EVENT, payload, **fields).to_dict()
    return {**packet, **over}


ANEW = frozenset({"valid", "spoofed", "stale", "unknown_type"})
"""Kinds signed anew for each send: the relay takes a signed frame once (its nonce), so the same
bytes again would be refused as a replay, not for the kind's own reason."""


def frames(keys_dir: Path, run_id: str, max_frame_bytes: int) -> dict[str, Callable[[], bytes]]:
    """How to make a frame of each kind, signed (or not) as that kind needs, for run ``run_id``."""
    signer = get_adapter("signed", FLOODER, keys_dir)
    valid = signer.encode(_event(run_id, 1, final=False))
    flipped = bytearray(valid)
    flipped[-len(canonical_json(_event(run_id, 1, final=False))) - 1] ^= 0xFF  # the signature's last byte
    made = {
        "valid": lambda: signer.encode(_event(run_id, 1, final=False)),
        "spoofed": lambda: signer.encode(_event(run_id, 1, final=False, src="1")),
        "stale": lambda: signer.encode(_event("a-finished-run", 1, final=False)),
        "unknown_type": lambda: signer.encode({**_event(run_id, 1, final=False), "type": "bogus"}),
    }
    fixed = {
        "malformed": b"\x00not a frame at all\xff" * 4,
        "oversized": valid + b" " * max_frame_bytes,
        "bad_signature": bytes(flipped),
    }
    return {**made, **{kind: _constant(blob) for kind, blob in fixed.items()}}


def _constant(blob: bytes) -> Callable[[], bytes]:
    return lambda: blob


def _flooder(port: int, keys_dir: str, seconds: float, max_frame_bytes: int, report: Any) -> None:
    """The flooder's process: serve one relay connection, flood, answer, report what it sent."""
    asyncio.run(_flood_serve(port, Path(keys_dir), seconds, max_frame_bytes, report))


async def _flood_serve(port: int, keys_dir: Path, seconds: float, max_frame_bytes: int, report: Any) -> None:
    said = Announcement(node_id=FLOODER, tool="reason", consumes=frozenset({"triples"}), reads=frozenset({"doc_init"}))
    reader = get_adapter("signed", FLOODER, keys_dir)  # the relay's frames, checked as an agent checks them
    done = asyncio.Event()
    sent: Counter[str] = Counter()

    async def handler(ws: ServerConnection) -> None:
        triples = asyncio.Event()
        flood: asyncio.Task[None] | None = None

        async def run_flood(run_id: str) -> None:
            makers = frames(keys_dir, run_id, max_frame_bytes)
            order = [k for k in KINDS for _ in range(1 if k == "oversized" else 4)]  # oversized ones are big
            end = time.monotonic() + seconds
            i = 0
            while time.monotonic() < end:
                kind = order[i % len(order)]
                await ws.send(makers[kind]())
                sent[kind] += 1
                i += 1
            await triples.wait()
            signer = get_adapter("signed", FLOODER, keys_dir)
            await ws.send(signer.encode(_event(run_id, 2, final=True)))
            sent["final"] += 1

        try:
            async for message in ws:
                packet = reader.decode(message if isinstance(message, bytes) else message.encode())
                if packet["type"] == "doc_init" and flood is None:
                    flood = asyncio.create_task(run_flood(packet["run_id"]))
                elif packet["type"] == "triples":
                    triples.set()
            if flood is not None:
                await flood
        finally:
            if flood is not None:
                flood.cancel()
            done.set()

    try:
        async with serve(
            handler, "127.0.0.1", port, max_size=None, compression=None, subprotocols=[subprotocol("signed")],
            process_response=lambda conn, req, resp: resp.headers.update(said.headers()),
        ):  # fmt: skip
            await done.wait()
    finally:
        report.put(dict(sent))  # what it sent, even if it failed (the bench must not wait for nothing)


def _rss_kib() -> dict[str, int]:
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return {k: int(fields[k].split()[0]) for k in ("VmRSS", "VmHWM")}


async def _one_run(settings: Settings, task: Task, out: Path) -> tuple[Any, float]:
    net = MeshNetwork(settings, task, out, quiet=True, lineup=lineup(settings))
    metrics = await run_and_finish(net)
    return metrics, time.monotonic()


def _honest_ms(records: list[FrameRecord], memories: dict[str, dict[str, Any]]) -> tuple[float | None, float | None]:
    """doc_init to the honest triples on the relay's clock (frame log), and the part of it
    spent outside the model (minus the model time of the honest agents' steps whose packets the log counted)."""
    start = next((r.t_ms for r in records if r.type == "doc_init"), None)
    end = next((r.t_ms for r in records if r.type == "triples" and r.status == "accepted"), None)
    if start is None or end is None:
        return None, None
    honest = [r for r in records if r.src != FLOODER and r.t_ms <= end]
    model, _ = model_time(honest, memories)
    return round(end - start, 1), round(end - start - model, 1)


def run_flood(settings: Settings, task: Task, out: Path, seconds: float = 10.0) -> dict[str, Any]:
    """A calm run, then a run under the flood, on the same honest agents; writes
    ``flood.json`` and ``flood.md`` under ``out`` and returns what ``flood.json`` holds."""
    out.mkdir(parents=True, exist_ok=True)
    base = free_port_block(4)
    keys = generate_keys(out / "keys", ["network", "0", "1", "2", "3"])
    settings = settings.model_copy(update={
        "agents": default_agents(base), "protocol": "signed", "keys_dir": keys, "routing": RoutingMode.TOPIC,
        "max_frame_bytes": min(settings.max_frame_bytes, 65536), "workspace_root": out / "ws",
        "mesh_token": "",  # the flooder is a plain WebSocket server of this bench: it proves no token
    })  # fmt: skip
    group = ProcessGroup(out / "logs")
    ctx = multiprocessing.get_context("spawn")
    results: dict[str, Any] = {}
    try:
        with model_server(settings, group):
            group.start_team(settings, leave_out=frozenset({FLOODER}))
            for phase, secs in (("calm", 0.0), ("flood", seconds)):
                report = ctx.Queue()
                flooder = ctx.Process(
                    target=_flooder, args=(base + int(FLOODER), str(keys), secs, settings.max_frame_bytes, report)
                )
                flooder.start()
                console.print(f"[{phase}] {'no flood' if not secs else f'flooding for {secs:g} s'} ...")
                before = _rss_kib()
                metrics, _ = asyncio.run(_one_run(settings, task, out / phase))
                after = _rss_kib()
                sent = report.get(timeout=60)
                flooder.join(timeout=10)
                results[phase] = _analyse(out / phase, metrics, sent, before, after)
    finally:
        group.stop_all()
    result = {"config": {"seconds": seconds, "protocol": "signed", "max_frame_bytes": settings.max_frame_bytes,
                         "task": task.task_id, "kinds": list(KINDS)}, **results}  # fmt: skip
    (out / "flood.json").write_text(json.dumps(result, indent=2))
    (out / "flood.md").write_text(_markdown(result))
    console.print(_table(result))
    return result


def _analyse(run: Path, metrics: Any, sent: dict[str, int], before: dict[str, int], after: dict[str, int]) -> dict[str, Any]:
    records = read_log(run / "frames.jsonl")
    mine = [r for r in records if r.src == FLOODER]
    rejected: Counter[str] = Counter()
    unexplained = []
    for r in mine:
        if r.status != "rejected":
            continue
        kind = next((k for k, prefix in REJECTED_AS.items() if (r.error or "").startswith(prefix)), None)
        if kind is None:
            unexplained.append(r.error)
        else:
            rejected[kind] += 1
    flood = [r for r in mine if r.type != "data_event" or r.tag != "final_answer"]
    span_s = (flood[-1].t_ms - flood[0].t_ms) / 1000 if len(flood) > 1 else 0.0
    honest_ms, outside_model_ms = _honest_ms(records, archived_memories(run / "run_artifacts.tar.gz"))
    return {
        "status": metrics.status,
        "sent": sent,
        "sent_total": sum(sent.values()),
        "logged_from_flooder": len(mine),
        "accepted_from_flooder": sum(1 for r in mine if r.status == "accepted"),
        "rejected": dict(rejected),
        "rejected_unexplained": unexplained[:5],
        "frames_per_s": round(len(flood) / span_s, 1) if span_s > 0 else None,
        "honest_doc_to_triples_ms": honest_ms,
        "honest_outside_model_ms": outside_model_ms,
        "rss_kib_before": before["VmRSS"],
        "rss_kib_after": after["VmRSS"],
        "rss_kib_peak": after["VmHWM"],
        "frame_log_bytes": (run / "frames.jsonl").stat().st_size,
        "audit_ok": all(a == b for _, a, b in audit(run)),
        "rejected_cnt": metrics.rejected_cnt,
    }


def _rows(result: dict[str, Any]) -> list[tuple[str, str, str]]:
    calm, flood = result["calm"], result["flood"]

    def mib(kib: int) -> str:
        return f"{kib / 1024:.1f} MiB"

    return [
        ("frames sent by the flooder", str(calm["sent_total"]), str(flood["sent_total"])),
        ("of them in the frame log", str(calm["logged_from_flooder"]), str(flood["logged_from_flooder"])),
        ("rejected, each with its reason", str(calm["rejected_cnt"]), str(flood["rejected_cnt"])),
        ("frames per second taken in", "–", str(flood["frames_per_s"])),
        ("honest agents: doc_init → triples", f"{calm['honest_doc_to_triples_ms']} ms", f"{flood['honest_doc_to_triples_ms']} ms"),
        ("of it outside the model (relay, agents, wire)", f"{calm['honest_outside_model_ms']} ms",
         f"{flood['honest_outside_model_ms']} ms"),
        ("relay process RSS before → after", f"{mib(calm['rss_kib_before'])} → {mib(calm['rss_kib_after'])}",
         f"{mib(flood['rss_kib_before'])} → {mib(flood['rss_kib_after'])}"),
        ("relay process peak RSS", mib(calm["rss_kib_peak"]), mib(flood["rss_kib_peak"])),
        ("run status, audit", f"{calm['status']}, {'agrees' if calm['audit_ok'] else 'DISAGREES'}",
         f"{flood['status']}, {'agrees' if flood['audit_ok'] else 'DISAGREES'}"),
    ]  # fmt: skip


def _table(result: dict[str, Any]) -> Table:
    table = Table(title=f"frame flood ({result['config']['seconds']:g} s, signed protocol)")
    for col in ("measure", "calm", "flood"):
        table.add_column(col)
    for row in _rows(result):
        table.add_row(*row)
    return table


def _markdown(result: dict[str, Any]) -> str:
    lines = ["| measure | calm | flood |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in _rows(result)]
    kinds = result["flood"]["sent"]
    lines += ["", "Sent by kind: " + ", ".join(f"{k} {v}" for k, v in kinds.items()), ""]
    return "\n".join(lines)
