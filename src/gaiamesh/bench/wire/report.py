"""``bench-wire``'s results: each protocol and peer count summarized (floor beside ours, each ratio
paired by round with its interval, ``bench/stats.py`` via ``tls/summary.py``), and the files:
``wire.json`` (everything, every request's time), ``wire.csv`` (a row a block), ``wire.md`` (the
table) and ``wire.png`` (the plot)."""

from __future__ import annotations

import csv
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path

from ..plots import pyplot, save
from ..tls.results import Ratio
from ..tls.summary import ratio
from .results import Block, Row, WireBench, sizes_label

GOAL = 1.3  # issue 63: our gateway and server within 1.3x of the SDK's own floor
PER_REQUEST_CONNS = 0.9  # a side that opens at least this many connections a request reuses none


def _measured(blocks: Sequence[Block], protocol: str, peers: int, side: str) -> dict[int, Block]:
    return {
        b.round: b
        for b in blocks
        if (b.protocol, b.peers, b.side) == (protocol, peers, side) and not b.warmup
    }


def _cpu(b: Block) -> float:
    return b.per_request(b.client_cpu_ms + b.server_cpu_ms)


def _median(values: Sequence[float]) -> float:
    return round(statistics.median(values), 3) if values else 0.0


def med(side: dict[int, Block], get: Callable[[Block], float]) -> float:
    """The median over a side's measured rounds of ``get``."""
    return _median([get(b) for b in side.values()])


def _paired(floor: dict[int, Block], ours: dict[int, Block], key: str) -> Ratio | None:
    both = sorted(set(floor) & set(ours))

    def get(b: Block) -> float:
        return statistics.median(b.ms) if key == "ms" and b.ms else (_cpu(b) if key == "cpu" else 0.0)

    return ratio([get(ours[r]) for r in both], [get(floor[r]) for r in both])


def _note(protocol: str, floor_conns: float, ours_conns: float) -> str:
    said = []
    if floor_conns >= PER_REQUEST_CONNS:
        said.append(
            f"the SDK alone opens a connection per request ({floor_conns:.2f}): {protocol}'s SDK reuses none"
        )
    if ours_conns >= PER_REQUEST_CONNS and floor_conns < PER_REQUEST_CONNS:
        said.append(f"ours opens a connection per request ({ours_conns:.2f}) where the SDK alone reuses them")
    return "; ".join(said)


def summarize(blocks: Sequence[Block]) -> list[Row]:
    rows = []
    for protocol, peers in dict.fromkeys((b.protocol, b.peers) for b in blocks):
        floor, ours = (_measured(blocks, protocol, peers, s) for s in ("floor", "ours"))
        if not floor or not ours:
            continue
        conns = {
            s: med(d, lambda b: b.per_request(b.connections)) for s, d in (("floor", floor), ("ours", ours))
        }
        rows.append(Row(
            protocol=protocol, peers=peers,
            floor_ms=_median([t for b in floor.values() for t in b.ms]),
            ours_ms=_median([t for b in ours.values() for t in b.ms]),
            ratio=_paired(floor, ours, "ms"), cpu_ratio=_paired(floor, ours, "cpu"),
            floor_cpu_ms=med(floor, _cpu), ours_cpu_ms=med(ours, _cpu),
            floor_client_cpu_ms=med(floor, lambda b: b.per_request(b.client_cpu_ms)),
            ours_client_cpu_ms=med(ours, lambda b: b.per_request(b.client_cpu_ms)),
            floor_server_cpu_ms=med(floor, lambda b: b.per_request(b.server_cpu_ms)),
            ours_server_cpu_ms=med(ours, lambda b: b.per_request(b.server_cpu_ms)),
            floor_bytes=med(floor, lambda b: b.per_request(b.bytes)), ours_bytes=med(ours, lambda b: b.per_request(b.bytes)),
            floor_conns=conns["floor"], ours_conns=conns["ours"],
            floor_reused=med(floor, lambda b: b.reused / b.connections if b.connections else 0.0),
            ours_reused=med(ours, lambda b: b.reused / b.connections if b.connections else 0.0),
            errors=sum(b.errors for b in (*floor.values(), *ours.values())),
            note=_note(protocol, conns["floor"], conns["ours"]),
        ))  # fmt: skip
    return rows


def _ratio_cell(r: Ratio | None) -> str:
    if r is None:
        return "–"
    text = f"{r.median:.2f}× [{r.low:.2f}, {r.high:.2f}]"
    if r.verdict == "within noise":
        return text + " (noise)"
    return text + (" **> 1.3×**" if r.median > GOAL and r.verdict == "beyond noise" else "")


def table(rows: Sequence[Row]) -> list[str]:
    lines = ["| protocol | peers | floor ms | ours ms | ratio | CPU ratio | CPU ms/req client floor / ours "
             "| server floor / ours | bytes/req floor / ours | conns/req floor / ours | note |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        lines.append(
            f"| {r.protocol} | {r.peers} | {r.floor_ms:.2f} | {r.ours_ms:.2f} | {_ratio_cell(r.ratio)} | "
            f"{_ratio_cell(r.cpu_ratio)} | {r.floor_client_cpu_ms:.2f} / {r.ours_client_cpu_ms:.2f} | "
            f"{r.floor_server_cpu_ms:.2f} / {r.ours_server_cpu_ms:.2f} | {r.floor_bytes:,.0f} / {r.ours_bytes:,.0f} | "
            f"{r.floor_conns:.3f} / {r.ours_conns:.3f} | {r.note}{f' ({r.errors} failed)' if r.errors else ''} |"
        )
    return lines


def markdown(result: WireBench) -> str:
    measured = [b for b in result.blocks if not b.warmup]
    lines = [
        "# bench-wire: each SDK's floor beside ours", "",
        f"{', '.join(result.protocols)} at {', '.join(map(str, result.peers))} concurrent peers; {result.requests} "
        f"requests per peer and block; {result.rounds} measured rounds after a warm-up round (discarded); frames "
        f"of {sizes_label()} in turn. Started {result.started}, {result.seconds:.0f} s.", "",
        *table(result.rows), "",
        "ms: the median request's time over every measured request. ratio: ours over floor, each round's "
        "median request paired by round, the median of those with its 95% bootstrap interval; (noise): the "
        "interval holds 1. CPU: the bench process (the clients and the tap's counting) and the server "
        "process, per request. conns/req: connections opened over the clients' life (their first request "
        "included) per request.", "",
        f"acp: ours on ACP_STORE={result.acp_store_ours}, the floor on acp-sdk's default MemoryStore.", "",
        f"Machine: {result.machine}. {result.contended_blocks} of {len(measured)} measured blocks overlapped "
        "other load (bench/load.py: other processes kept at least 0.25 cores busy).", "",
    ]  # fmt: skip
    return "\n".join(lines)


CSV_FIELDS = ("protocol", "side", "peers", "round", "warmup", "requests", "errors", "ms_p50", "ms_p90",
              "client_cpu_ms_per_req", "server_cpu_ms_per_req", "bytes_per_req", "http_requests",
              "connections", "reused", "conns_per_req", "seconds", "load_1m", "cpu_other", "contended")  # fmt: skip


def csv_rows(blocks: Sequence[Block]) -> list[dict[str, object]]:
    out = []
    for b in blocks:
        cuts = (
            statistics.quantiles(b.ms, n=10, method="inclusive")
            if len(b.ms) > 1
            else [*b.ms] * 9 or [0.0] * 9
        )
        out.append({
            "protocol": b.protocol, "side": b.side, "peers": b.peers, "round": b.round, "warmup": b.warmup,
            "requests": b.requests, "errors": b.errors, "ms_p50": _median(b.ms), "ms_p90": round(cuts[-1], 3),
            "client_cpu_ms_per_req": round(b.per_request(b.client_cpu_ms), 4),
            "server_cpu_ms_per_req": round(b.per_request(b.server_cpu_ms), 4),
            "bytes_per_req": round(b.per_request(b.bytes), 1), "http_requests": b.http_requests,
            "connections": b.connections, "reused": b.reused, "conns_per_req": round(b.per_request(b.connections), 4),
            "seconds": b.seconds, "load_1m": b.load.load_1m, "cpu_other": b.load.cpu_other, "contended": b.load.contended,
        })  # fmt: skip
    return out


def plot(result: WireBench, path: Path) -> None:
    plt = pyplot()
    rows = result.rows
    labels = [f"{r.protocol}\n×{r.peers}" for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(max(8, 1.2 * len(rows) + 4), 4.5))
    xs = range(len(rows))
    left.bar([x - 0.2 for x in xs], [r.floor_ms for r in rows], width=0.4, label="floor (the SDK alone)")
    left.bar([x + 0.2 for x in xs], [r.ours_ms for r in rows], width=0.4, label="ours")
    left.set_xticks(list(xs), labels)
    left.set_yscale("log")  # 1 ms at one peer, a second at 64: one scale would hide the small ones
    left.set_ylabel("median request, ms (log)")
    left.legend()
    medians = [r.ratio.median if r.ratio else 0.0 for r in rows]
    errs = [[max(0.0, m - (r.ratio.low if r.ratio else m)) for m, r in zip(medians, rows, strict=True)],
            [max(0.0, (r.ratio.high if r.ratio else m) - m) for m, r in zip(medians, rows, strict=True)]]  # fmt: skip
    right.bar(list(xs), medians, yerr=errs, color="tab:gray")
    right.axhline(1.0, color="black", linewidth=0.8)
    right.axhline(GOAL, color="tab:red", linestyle="--", linewidth=0.8, label="goal: 1.3×")
    right.set_xticks(list(xs), labels)
    right.set_ylabel("ours / floor (time)")
    right.legend()
    fig.suptitle("bench-wire: each SDK's floor beside ours")
    fig.tight_layout()
    save(fig, path)


def write(result: WireBench, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "wire.json").write_text(result.dump())
    with (out / "wire.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        writer.writeheader()
        writer.writerows(csv_rows(result.blocks))
    (out / "wire.md").write_text(markdown(result))
    plot(result, out / "wire.png")
