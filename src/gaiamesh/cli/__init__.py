"""The ``gaiamesh`` command: its subcommands live with their kind, a module a group (``runs``,
``streams``, the benches' ``compare``, ``plans``, ``overhead``, ``storms``, ``swarm``, ``attacks``,
``tls``, ``wire``, and ``upkeep``, ``deploy``); an error of any kind ends a command with that kind's words and exit code
(``gaiamesh.errors``), here and nowhere else."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from pydantic import ValidationError

from ..errors import GaiameshError, exit_code, label
from . import attacks, compare, deploy, overhead, plans, runs, storms, streams, swarm, tls, upkeep, wire
from .common import errors

# in the order `gaiamesh --help` has always listed them (a group's commands are not all side by side)
COMMANDS = (
    runs.add_commands, streams.add_commands, compare.add_bench, plans.add_plans, compare.add_report,
    compare.add_compose, plans.add_bench_plans, overhead.add_overhead, storms.add_commands,
    overhead.add_concurrency, swarm.add_commands, attacks.add_commands, tls.add_commands, wire.add_commands, upkeep.add_commands,
    deploy.add_commands,
)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gaiamesh", description="Benchmark harness for multi-agent LLM meshes")
    sub = p.add_subparsers(dest="command", required=True)
    for add in COMMANDS:
        add(sub)
    return p


def _root_chatter(record: logging.LogRecord) -> bool:
    """The anp SDK logs every request at INFO on the root logger, not on a logger of its own:
    its INFO lines are dropped (its warnings stay)."""
    return not (record.name == "root" and record.levelno < logging.WARNING
                and f"{os.sep}anp{os.sep}" in record.pathname)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s", stream=sys.stderr
    )
    for noisy in ("httpx", "httpcore", "httpx2", "httpcore2", "openai", "matplotlib", "absl", "websockets", "mcp",
                  "anp", "a2a", "acp_sdk", "agora", "sse_starlette"):  # fmt: skip
        logging.getLogger(noisy).setLevel(logging.WARNING)
    for handler in logging.getLogger().handlers:
        handler.addFilter(_root_chatter)
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except GaiameshError as exc:  # each kind's words and exit code: gaiamesh.errors, in one place
        errors.print(f"[red]{label(exc)}:[/red] {exc}")
        return exit_code(exc)
    except ValidationError as exc:  # settings from the environment that pydantic refused
        errors.print(f"[red]bad configuration:[/red] {exc}")
        return 2
