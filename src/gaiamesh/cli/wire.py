"""``gaiamesh bench-wire``: each native protocol's SDK floor beside our binding (bench/wire/)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError
from .common import console

if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]


def _ints(text: str) -> list[int]:
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ConfigError(f"--peers takes whole numbers separated by commas, not {text!r}") from None


def _cmd_bench_wire(args: argparse.Namespace) -> int:
    from ..bench.wire.report import table
    from ..bench.wire.run import check, run_wire

    protocols = [p.strip() for p in args.protocols.split(",") if p.strip()]
    peers = _ints(args.peers)
    check(protocols, peers, args.requests, args.rounds)
    result = run_wire(Path(args.out), protocols, peers, args.requests, args.rounds,
                      progress=lambda said: console.print(f"[dim]{said}[/dim]"))  # fmt: skip
    console.print("\n".join(table(result.rows)))
    if result.contended_blocks:
        console.print(f"[yellow]{result.contended_blocks} measured blocks overlapped other load[/yellow]")
    console.print(f"{result.seconds:.0f} s; wrote {args.out}/wire.json, wire.csv, wire.md, wire.png")
    return 0


def add_commands(sub: Subparsers) -> None:
    from ..bench.wire import DEFAULT_PROTOCOLS, FLOOR_PROTOCOLS

    p = sub.add_parser("bench-wire", help="each native protocol's SDK floor beside our gateway and server")
    # anp and agora are asked for by name: their SDKs' clients open a connection per request and
    # their floors are slow (DID-WBA, Flask's server), which would make the default run longer
    # than its 8 minutes (docs/results/2026-12-05-wire-floor.md, "anp and agora")
    p.add_argument("--protocols", default=",".join(DEFAULT_PROTOCOLS),
                   help=f"comma-separated, of {','.join(FLOOR_PROTOCOLS)} (default {','.join(DEFAULT_PROTOCOLS)})")  # fmt: skip
    p.add_argument("--peers", default="1,64", help="concurrent peers, comma-separated (default 1,64)")
    p.add_argument("--requests", type=int, default=20, help="requests per peer and block (default 20)")
    p.add_argument("--rounds", type=int, default=3,
                   help="measured rounds; a warm-up round runs first and is discarded (default 3)")  # fmt: skip
    p.add_argument(
        "--out", default="bench/wire", help="where wire.json, .csv, .md and .png go (default bench/wire)"
    )
    p.set_defaults(func=_cmd_bench_wire)
