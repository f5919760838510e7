"""``gaiamesh stream``: a file of items through one long-lived team (bench/stream/run.py), under one
protocol or several, with one number of workers or several."""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from rich.table import Table

from ..errors import ConfigError, RunStatus
from .common import Subparsers, console, errors, settings_from

COLUMNS = ("protocol", "workers", "status", "items", "answered", "failed", "retries", "duplicates", "items_per_min",
           "latency_p50_s", "latency_p95_s", "latency_p99_s", "latency_mean_s", "service_p50_s", "service_mean_s",
           "model_p50_s", "wire_p50_s",
           "bytes_per_item", "worker_variance", "quality", "frames", "relay_cpu_s", "memory_peak_mib", "out")  # fmt: skip


def _list(text: str, what: str) -> list[str]:
    values = [v.strip() for v in text.split(",") if v.strip()]
    if not values:
        raise ConfigError(f"--{what} names nothing")
    return values


def _workers(text: str) -> list[int]:
    try:
        counts = [int(v) for v in _list(text, "workers")]
    except ValueError as exc:
        raise ConfigError(f"--workers {text!r}: whole numbers, comma-separated (4 or 4,8,16)") from exc
    if any(n < 1 or n > 256 for n in counts):
        raise ConfigError(f"--workers {text!r}: each from 1 to 256")
    return counts


def _cmd_stream(args: argparse.Namespace) -> int:
    from ..bench.stream.run import StreamOptions, run_stream
    from ..mesh.protocols import check

    protocols = [check(p) for p in _list(args.protocols or settings_from(args).protocol, "protocols")]
    counts = [0] if args.team == "deployed" and args.workers is None else _workers(args.workers or "4")
    if args.storm_every < 0 or args.storm_down < 0 or args.storm_kill < 1 or args.storm_limit < 0:
        raise ConfigError("--storm-every, --storm-down and --storm-limit are at least 0, --storm-kill at least 1")
    out = Path(args.out)
    single = len(protocols) == 1 and len(counts) == 1
    rows: list[dict[str, object]] = []
    ok = True
    for protocol in protocols:
        for n in counts:
            args.protocol = protocol
            settings = settings_from(args)
            options = StreamOptions(
                tasks=args.tasks, workers=n, team=args.team, limit=args.limit, policy=args.policy, per_worker=args.per_worker,
                replay=Path(args.replay) if args.replay else None, pace=args.pace, timeout=args.stream_timeout,
                storm_every=args.storm_every, storm_kill=args.storm_kill, storm_down=args.storm_down,
                storm_seed=args.storm_seed, storm_limit=args.storm_limit,
            )  # fmt: skip
            where = out if single else out / f"{protocol}-{n}w"
            how = f"{n} workers" if n else "every deployed worker"
            console.print(f"stream: {args.tasks} through {how} under {protocol} ({settings.transport}) -> {where}")
            report = run_stream(settings, options, where)
            s = report.summary
            ok &= report.status == RunStatus.OK and s.failed == 0 and report.unaccounted == 0 and report.told_twice == 0
            if report.storm is not None:
                console.print(
                    f"storm: {len(report.storm.kills)} workers killed; {report.unaccounted} items lost, "
                    f"{report.told_twice} answered twice, {s.duplicates} late copies not taken"
                )
            rows.append({
                "protocol": protocol, "workers": report.workers, "status": report.status, "items": s.items, "answered": s.answered,
                "failed": s.failed, "retries": s.retries, "duplicates": s.duplicates,
                "items_per_min": round(s.items_per_min, 1),
                "latency_p50_s": _r(s.latency.p50 if s.latency else None),
                "latency_p95_s": _r(s.latency.p95 if s.latency else None),
                "latency_p99_s": _r(s.latency.p99 if s.latency else None),
                "latency_mean_s": _r(s.latency.mean if s.latency else None),
                "service_p50_s": _r(report.service.p50 if report.service else None),
                "service_mean_s": _r(report.service.mean if report.service else None),
                "model_p50_s": _r(report.model.p50 if report.model else None),
                "wire_p50_s": _r(report.wire.p50 if report.wire else None),
                "bytes_per_item": _r(report.bytes.mean if report.bytes else None, 1),
                "worker_variance": round(s.worker_variance, 2), "quality": _r(report.quality),
                "frames": report.frames, "relay_cpu_s": _r(report.relay_cpu_s),
                "memory_peak_mib": _r(report.memory_peak_mib),
                "out": str(where),
            })  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    with (out / "streams.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    if len(counts) > 1:
        console.print(f"plot: {plot_curve(rows, out / 'streams.png')}")
    console.print(_table(rows))
    console.print(
        f"results: {out}/streams.csv; each stream's items.csv, stream.json, metrics.json, run_artifacts.tar.gz"
    )
    if not ok:
        errors.print("[red]a stream did not answer every item: see its items.csv (status, why)[/red]")
    return 0 if ok else 1


def plot_curve(rows: list[dict[str, object]], path: Path) -> Path:
    """Throughput and p50 latency against the number of workers, a line per protocol."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for protocol in dict.fromkeys(str(r["protocol"]) for r in rows):
        mine = [r for r in rows if r["protocol"] == protocol]
        workers = [int(str(r["workers"])) for r in mine]
        left.plot(workers, [float(str(r["items_per_min"])) for r in mine], marker="o", label=protocol)
        right.plot(workers, [float(str(r["latency_p50_s"] or 0)) for r in mine], marker="o", label=protocol)
    for ax, what in ((left, "items per minute"), (right, "latency p50 (s)")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("workers")
        ax.set_ylabel(what)
        ax.grid(alpha=0.3)
    left.legend()
    fig.suptitle("gaiamesh stream: workers against throughput and latency")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _r(v: float | None, digits: int = 3) -> float | None:
    return None if v is None else round(v, digits)


def _table(rows: list[dict[str, object]]) -> Table:
    shown = {"protocol": "protocol", "workers": "workers", "status": "status", "answered": "answered",
             "failed": "failed", "retries": "retries", "items_per_min": "items/min", "latency_p50_s": "p50 s",
             "latency_p95_s": "p95 s", "model_p50_s": "model p50", "wire_p50_s": "wire p50",
             "bytes_per_item": "B/item", "worker_variance": "load var"}  # fmt: skip
    table = Table(title="gaiamesh stream")
    for name, head in shown.items():
        table.add_column(head, justify="left" if name in ("protocol", "status") else "right")
    for row in rows:
        table.add_row(*("" if row[n] is None else str(row[n]) for n in shown))
    return table


def add_commands(sub: Subparsers) -> None:
    sp = sub.add_parser("stream", help="a file of items through one team: a coordinator and N workers")
    sp.add_argument("--tasks", required=True,
                    help="a JSONL of {\"id\", \"q\"} (tasks-stream/protocolbench-top1000.jsonl), or a task set a "
                         "run takes (folders, FILE.jsonl#SET): each task one item, scored")  # fmt: skip
    sp.add_argument("--workers", help="worker agents: N, or several (4,8,16) for a curve (default 4; with --team "
                                      "deployed: every answerer the deployment has)")  # fmt: skip
    sp.add_argument("--team", choices=["local", "deployed"], default="local",
                    help="local: start the coordinator and workers here (default); deployed: use the agents AGENTS "
                         "names (a compose or swarm stack's agent-coordinator and agent-answerer replicas)")  # fmt: skip
    sp.add_argument("--protocols", help="wire protocols, comma-separated (default: PROTOCOL)")
    sp.add_argument("--transport", choices=["relay", "native"],
                    help="relay: the relay's WebSocket; native: the protocol's own wire (TRANSPORT)")  # fmt: skip
    sp.add_argument("--limit", type=int, default=0, help="the first N items only (default: all)")
    sp.add_argument("--policy", choices=["dynamic", "round-robin"], default="dynamic",
                    help="dynamic: the next free worker (ProtocolBench's); round-robin: in turn")  # fmt: skip
    sp.add_argument(
        "--per-worker", dest="per_worker", type=int, default=1, help="items in flight on a worker (1)"
    )
    sp.add_argument(
        "--replay", help="answer from the model calls recorded under this folder (an earlier stream)"
    )
    sp.add_argument("--pace", choices=["recorded", "none"], default="recorded",
                    help="with --replay: each call takes its recorded time, or none (the harness's ceiling)")  # fmt: skip
    sp.add_argument("--timeout", dest="stream_timeout", type=float, default=3600.0,
                    help="seconds the whole stream may take (3600)")  # fmt: skip
    storm = sp.add_argument_group("a fail-storm during the stream (workers only: the coordinator holds the stream)")
    storm.add_argument("--storm-every", dest="storm_every", type=float, default=0.0,
                       help="seconds between kills (default 0: no storm)")  # fmt: skip
    storm.add_argument("--storm-kill", dest="storm_kill", type=int, default=1, help="workers killed each time (1)")
    storm.add_argument("--storm-down", dest="storm_down", type=float, default=1.0,
                       help="seconds before a killed worker restarts (1)")  # fmt: skip
    storm.add_argument("--storm-seed", dest="storm_seed", type=int, default=1, help="which workers die (seeded)")
    storm.add_argument("--storm-limit", dest="storm_limit", type=int, default=0,
                       help="stop after N kills (default 0: until the stream ends)")  # fmt: skip
    sp.add_argument("--model", help="model name on the model server (MODEL)")
    sp.add_argument("--ollama-host", dest="ollama_host", help="model server URL (OLLAMA_HOST)")
    sp.add_argument("--out", required=True, help="the folder the stream writes")
    sp.set_defaults(func=_cmd_stream, protocol=None)
