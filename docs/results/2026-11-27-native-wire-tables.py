"""The tables and plot of docs/results/2026-11-27-native-wire.md, from a bench's results.csv
(``python docs/results/2026-11-27-native-wire-tables.py BENCH_DIR [PLOT.png]``): per protocol and
transport, medians over the runs of each layer's bytes, the connections, the segments and the
timings; whether every run answered as its twin on the other transport (same task, same repeat);
and the layers as stacked bars, relay beside native."""

from __future__ import annotations

import csv
import statistics
import sys
from pathlib import Path


def med(rows: list[dict[str, str]], *cols: str) -> float | None:
    values = [sum(float(r[c]) for c in cols) for r in rows if all(r.get(c) not in ("", None) for c in cols)]
    return statistics.median(values) if values else None


def fmt(v: float | None, digits: int = 0) -> str:
    return "–" if v is None else f"{v:,.{digits}f}"


def main(folder: Path) -> None:
    rows = list(csv.DictReader((folder / "results.csv").open()))
    protocols = list(dict.fromkeys(r["protocol"] for r in rows))
    twins: dict[tuple[str, str, str], dict[str, str]] = {}
    for r in rows:
        twins.setdefault((r["protocol"], r["task_id"], r["repeat"]), {})[r["transport"]] = r["prediction"]
    same = sum(1 for t in twins.values() if len(set(t.values())) == 1 and len(t) == 2)
    print(f"{len(rows)} runs, {sum(r['status'] == 'ok' for r in rows)} ok; answers identical between transports "
          f"in {same} of {len(twins)} task x repeat x protocol pairs\n")
    print("| protocol | transport | packet B (tx+rx) | bodies B | HTTP B (socket) | IP/TCP header B | segments | "
          "requests | connections (reused) | first request ms / B | ack ms p50 / p99 | run ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for p in protocols:
        for transport in ("relay", "native"):
            g = [r for r in rows if r["protocol"] == p and r["transport"] == transport]
            if not g:
                continue
            native = transport == "native"
            print("| " + " | ".join([
                p, transport, fmt(med(g, "bytes_tx", "bytes_rx")),
                fmt(med(g, "body_tx", "body_rx")) if native else "–",
                fmt(med(g, "http_tx", "http_rx")) if native else "–",
                fmt(med(g, "ip_tcp_header_bytes")) if native else "–",
                fmt(med(g, "segs_out", "segs_in")) if native else "–",
                fmt(med(g, "requests")) if native else "–",
                f"{fmt(med(g, 'connections'))} ({fmt(med(g, 'connections_reused'))})" if native else "–",
                f"{fmt(med(g, 'first_request_ms'), 1)} / {fmt(med(g, 'first_request_bytes'))}" if native else "–",
                f"{fmt(med(g, 'ack_ms_p50'), 2)} / {fmt(med(g, 'ack_ms_p99'), 2)}" if native else "–",
                fmt(med(g, "elapsed_ms")),
            ]) + " |")  # fmt: skip


def plot(folder: Path, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = list(csv.DictReader((folder / "results.csv").open()))
    protocols = list(dict.fromkeys(r["protocol"] for r in rows))
    fig, (ax, cx) = plt.subplots(1, 2, figsize=(14, 5.5), gridspec_kw={"width_ratios": [3, 1.4]})
    layers = [("packet", "#4c72b0"), ("envelope", "#dd8452"), ("HTTP", "#55a868"), ("IP/TCP headers", "#8172b2")]
    for i, p in enumerate(protocols):
        relay = [r for r in rows if r["protocol"] == p and r["transport"] == "relay"]
        native = [r for r in rows if r["protocol"] == p and r["transport"] == "native"]
        frames, header = med(relay, "bytes_tx", "bytes_rx") or 0, med(relay, "header_overhead") or 0
        packet = med(native, "bytes_tx", "bytes_rx") or 0
        body, http = med(native, "body_tx", "body_rx") or 0, med(native, "http_tx", "http_rx") or 0
        tcp = med(native, "ip_tcp_header_bytes") or 0
        for x, parts in ((i - 0.2, [frames - header, header, 0, 0]), (i + 0.2, [packet, body - packet, http - body, tcp])):
            bottom = 0.0
            for (name, colour), v in zip(layers, parts, strict=True):
                ax.bar(x, v, 0.38, bottom=bottom, color=colour, label=name if i == 0 and x > i else None,
                       hatch="//" if x < i else None, edgecolor="white")  # fmt: skip
                bottom += v
        cx.bar(i, med(native, "connections") or 0, color="#c44e52")
    ax.set_xticks(range(len(protocols)), protocols)
    ax.set_title("bytes per run by layer (median): left relay (hatched: its frames), right native")
    ax.legend()
    cx.set_xticks(range(len(protocols)), protocols, rotation=45)
    cx.set_title("TCP connections per run, native (median)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
    if len(sys.argv) > 2:
        plot(Path(sys.argv[1]), Path(sys.argv[2]))
