"""``gaiamesh bench-attacks``: the attacks each protocol stops (bench/attacks/)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table

from ..errors import ConfigError
from ..tasks import load_task
from .common import common_options, console, matrix, settings_from

if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]

ALL_PROTOCOLS = "json,binary,compressed,signed,a2a,acp,agora,anp,mcp"


def _cmd_bench_attacks(args: argparse.Namespace) -> int:
    from ..bench.attacks import report
    from ..bench.attacks.judge import ATTACKS
    from ..bench.attacks.matrix import SECURITY, columns_of, run_attacks

    names = [a.name for a in ATTACKS]
    chosen = [a.strip() for a in args.attacks.split(",") if a.strip()] if args.attacks else names
    if unknown := [a for a in chosen if a not in names]:
        raise ConfigError(f"unknown attack(s) {', '.join(unknown)}; choose from {', '.join(names)}")
    attacks = [a for a in names if a in chosen]
    if args.window <= 0:
        raise ConfigError("--window must be positive: it is the replay window the late attack waits out")
    settings = settings_from(args).model_copy(update={"replay_window_s": args.window})
    if args.replay:
        settings = settings.model_copy(update={"llm_backend": "replay", "replay_from": Path(args.replay)})
    # a blocked attack leaves the run waiting for the answer it refused: it ends at the timeout
    # (replayed, a calm run takes under a second: the replay window and 3 s more are plenty)
    timeout = args.run_timeout or (args.window + 3 if args.replay else 120.0)
    # REJOIN_GRACE: a connection TLS closes on a tampered record is reached again and its work sent
    # again, as a deployment that keeps its runs through a lost agent does
    settings = settings.model_copy(update={"run_timeout": max(timeout, args.window + 3), "connect_timeout": 20.0,
                                           "rejoin_grace": args.rejoin_grace})  # fmt: skip
    task = load_task(Path(args.task))
    securities = tuple(dict.fromkeys(x.strip() for x in args.security.split(",") if x.strip()))
    bad = [x for x in securities if x not in SECURITY]
    if bad or not securities:
        raise ConfigError(f"--security: {', '.join(bad) or 'nothing'}? choose from {', '.join(SECURITY)}")
    transports = tuple(dict.fromkeys(x.strip() for x in args.transports.split(",") if x.strip()))
    if not transports or set(transports) - {"relay", "native"}:
        raise ConfigError(f"--transports {args.transports!r}: choose relay, native or both")
    rows = run_attacks(settings, task, columns_of(matrix(args.protocols), transports, securities), attacks,
                       Path(args.out))  # fmt: skip
    config = {"task": task.task_id, "backend": "replayed" if args.replay else "live", "window_s": args.window,
              "run_timeout_s": settings.run_timeout, "protocols": matrix(args.protocols), "attacks": attacks,
              "security": list(securities), "transports": list(transports)}  # fmt: skip
    result = report.write(rows, config, Path(args.out))
    table = Table(title="attacks: outcome per protocol (/native: its own wire; +tls, +mtls: WIRE_TLS)")
    protocols = list(dict.fromkeys(r.column for r in rows))
    for head in ("attack", *protocols):
        table.add_column(head)
    at = {(r.column, r.attack): r.outcome for r in rows}
    for a in attacks:
        table.add_row(a, *(at.get((p, a), "") for p in protocols))
    console.print(table)
    s = result["summary"]
    console.print(f"frames lost {s['frames_lost']}, answers changed {s['answers_changed']}, audits failed "
                  f"{s['audits_failed']}; wrote {args.out}/attacks.csv, .json, .md, .png")  # fmt: skip
    return 0 if not (s["frames_lost"] or s["answers_changed"] or s["audits_failed"]) else 1


def add_commands(sub: Subparsers) -> None:
    p = sub.add_parser("bench-attacks", help="attacks on the wire and at admission, under every protocol: who stops what")
    p.add_argument("--task", default="tasks/solar-farm", help="the task each run answers (default tasks/solar-farm)")
    p.add_argument("--protocols", default=ALL_PROTOCOLS)
    p.add_argument("--attacks", default="", help="a comma-separated subset (default: all)")
    p.add_argument("--window", type=float, default=3.0, help="REPLAY_WINDOW_S for the bench's runs (default 3)")
    p.add_argument("--security", default="none,tls,mtls",
                   help="transport security under each protocol on the relay's wire: none, tls, mtls (WIRE_TLS)")
    p.add_argument("--transports", default="relay,native",
                   help="the relay's WebSocket, each protocol's own wire (TRANSPORT=native), or both (default)")
    p.add_argument("--rejoin-grace", type=float, default=5.0,
                   help="REJOIN_GRACE: seconds a run waits for an agent whose connection closed (default 5)")
    p.add_argument("--out", default="bench/attacks")
    p.add_argument("--replay", metavar="FROM", help="answer every model call from the runs under FROM: no model server")
    common_options(p)  # --run-timeout: here --window + 3 s replayed, 120 s live unless given
    p.set_defaults(func=_cmd_bench_attacks)
