"""What every command module shares: the consoles, the settings from a command line, the
options several commands take, and the end-of-run summary table."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from ..errors import ConfigError
from ..evaluation.metrics import RunMetrics
from ..settings import Settings, load_settings

if TYPE_CHECKING:  # what add_subparsers() returns (generic for type checkers only)
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]
else:
    Subparsers = argparse._SubParsersAction

TASKS_HELP = "folder of task folders (default tasks/), or a task-set file (FILE.jsonl, FILE.jsonl#SET)"

console = Console()
errors = Console(stderr=True, soft_wrap=True)  # error messages: on stderr, never folded
if not console.is_terminal:
    console.width = 120  # compose logs and pipes: keep the summary table readable


def matrix(protocols: str, repeat: int = 1) -> list[str]:
    """A bench's protocols (``--protocols a,b``, each checked by the one check of a protocol's
    name) and its ``--repeat`` checked at least 1."""
    # Imported here, not at the top: every container's entry point imports the CLI, and the model
    # server's image has none of the protocols' SDKs.
    from ..mesh.protocols import check

    if repeat < 1:
        raise ConfigError("--repeat must be at least 1")
    return [check(p.strip()) for p in protocols.split(",") if p.strip()]


def transports(names: str | None, protocols: list[str], strategies: list[str] | None = None) -> list[str] | None:
    """A bench's ``--transports a,b`` (None: TRANSPORT), each known, and with ``native`` every
    protocol one that has a native wire."""
    if not names:
        return None
    from ..mesh import native

    chosen = [t.strip() for t in names.split(",") if t.strip()]
    for t in chosen:
        if t not in native.TRANSPORTS:
            raise ConfigError(f"unknown transport {t!r}; available: {', '.join(native.TRANSPORTS)}")
    if "native" in chosen:
        for protocol in protocols:
            for strategy in strategies or ["pipeline"]:
                native.check(protocol, strategy)
    return chosen


SUMMARY_KEYS = [
    "status", "error", "task_id", "question", "answer", "prediction", "quality_score", "exact_match",
    "rouge_l", "gaia_match", "protocol", "routing", "bytes_tx", "bytes_rx", "pkt_cnt", "header_overhead",
    "rejected_cnt", "token_sum", "elapsed_ms", "llm_ms", "network_share",
]  # fmt: skip


def run_title(command: str, metrics: RunMetrics) -> str:
    """What a summary is of: the command, the task, and for a mesh run the team that answered
    (its strategy) and the protocol (a baseline is one model call: neither)."""
    team = [] if metrics.mode == "baseline" else [metrics.strategy or "pipeline", metrics.protocol or "?"]
    return " · ".join([command, metrics.task_id, *team])


def summary_table(metrics: RunMetrics, command: str = "gaiamesh") -> Table:
    """The end-of-run table: status, answer, quality and traffic counters, under a title that
    names the task, strategy and protocol."""
    table = Table(title=run_title(command, metrics), show_header=True, header_style="bold")
    table.add_column("metric")
    table.add_column("value", overflow="fold")
    for key in SUMMARY_KEYS:
        value = getattr(metrics, key)
        if key == "quality_score" and value is None:
            table.add_row(key, "not scored (no gold answer)")
        elif value is not None:
            table.add_row(key, f"{value:.4f}" if isinstance(value, float) else str(value))
    if (w := metrics.layers) is not None:  # the protocol's own wire, below the packet
        table.add_row("transport", "native: the protocol's own wire")
        table.add_row("http bytes (tx / rx)", f"{w.http_tx:,} / {w.http_rx:,} ({w.body_tx:,} / {w.body_rx:,} in bodies)")
        table.add_row("requests, connections", f"{w.requests} on {w.connections} ({w.connections_reused} reused)")
        table.add_row("tcp segments (out / in)", f"{w.segs_out} / {w.segs_in}, {w.ip_tcp_header_bytes:,} B of IP/TCP headers")
    return table


def settings_from(args: argparse.Namespace) -> Settings:
    """The settings, with what the command line sets over the environment and ``.env``."""
    overrides = {k: v for k, v in vars(args).items() if k in Settings.model_fields and v is not None}
    return load_settings(**overrides)


def common_options(sp: argparse.ArgumentParser) -> None:
    """The options of every command that runs a mesh itself."""
    sp.add_argument("--protocol", help="wire protocol (PROTOCOL)")
    sp.add_argument("--transport", choices=["relay", "native"],
                    help="relay: the relay's WebSocket; native: the protocol's own wire (TRANSPORT)")  # fmt: skip
    sp.add_argument("--strategy", help="pipeline | orchestrated: the team that answers (STRATEGY)")
    sp.add_argument("--routing", help="broadcast | topic | share (ROUTING)")
    sp.add_argument("--model", help="model name on the model server (MODEL)")
    sp.add_argument("--ollama-host", dest="ollama_host", help="model server URL (OLLAMA_HOST)")
    sp.add_argument("--run-timeout", dest="run_timeout", type=float, help="seconds (RUN_TIMEOUT)")
    sp.add_argument("--workspaces", dest="workspace_root", help="workspace root (WORKSPACE_ROOT)")
