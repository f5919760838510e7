"""The ``gaiamesh`` command: its subcommands live with their kind (``runs``, ``benchmarks``,
``upkeep``, ``deploy``); an error of any kind ends a command with that kind's words and exit code
(``gaiamesh.errors``), here and nowhere else."""

from __future__ import annotations

import argparse
import logging
import sys

from pydantic import ValidationError

from ..errors import GaiameshError, exit_code, label
from . import benchmarks, deploy, runs, upkeep
from .common import errors


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gaiamesh", description="Benchmark harness for multi-agent LLM meshes")
    sub = p.add_subparsers(dest="command", required=True)
    for kind in (runs, benchmarks, upkeep, deploy):
        kind.add_commands(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s", stream=sys.stderr
    )
    for noisy in ("httpx", "httpcore", "httpx2", "httpcore2", "openai", "matplotlib", "absl", "websockets", "mcp"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except GaiameshError as exc:  # each kind's words and exit code: gaiamesh.errors, in one place
        errors.print(f"[red]{label(exc)}:[/red] {exc}")
        return exit_code(exc)
    except ValidationError as exc:  # settings from the environment that pydantic refused
        errors.print(f"[red]bad configuration:[/red] {exc}")
        return 2
