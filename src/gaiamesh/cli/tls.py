"""``gaiamesh bench-tls``: what WIRE_TLS costs on the relay's wire (bench/tls/)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError
from .common import console

if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]


def _cmd_bench_tls(args: argparse.Namespace) -> int:
    from ..bench.tls.report import table
    from ..bench.tls.run import run_tlscost

    for name in ("rounds", "connects", "messages"):
        if getattr(args, name) < 1:
            raise ConfigError(f"--{name} must be at least 1")
    result = run_tlscost(Path(args.out), args.rounds, args.connects, args.messages)
    console.print("\n".join(table(result.measures)))
    if result.contended_rounds:
        console.print(f"[yellow]{result.contended_rounds} of {args.rounds} rounds overlapped other load[/yellow]")
    console.print(f"{result.seconds:.0f} s; wrote {args.out}/tlscost.json, tlscost.md, tlscost.png")
    return 0


def add_commands(sub: Subparsers) -> None:
    p = sub.add_parser("bench-tls", help="what WIRE_TLS costs: connect time, bytes and CPU per frame, off/tls/mtls")
    p.add_argument("--out", default="bench/tls", help="where tlscost.json, .md and .png go (default bench/tls)")
    p.add_argument("--rounds", type=int, default=5,
                   help="measured rounds, each over every mode in a rotated order; a warm-up round runs first "
                   "and is discarded (default 5)")  # fmt: skip
    p.add_argument("--connects", type=int, default=200, help="connects per mode and round (default 200)")
    p.add_argument("--messages", type=int, default=2000,
                   help="frames of each size per mode and round, for the CPU per frame (default 2000)")  # fmt: skip
    p.set_defaults(func=_cmd_bench_tls)
