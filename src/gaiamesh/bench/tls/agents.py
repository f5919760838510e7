"""The agent process of ``bench-tls``: one real ``MeshAgent`` a mode, in one process of its own
(``python -m gaiamesh.bench.tls.agents --serve-agents off=PORT,tls=PORT,mtls=PORT``), started and
stopped by :func:`agent_process`; and the heap freeze both processes make once they are ready."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from ...deploy.local import child_env
from ...mesh.wiretls import WireTls
from ...settings import Settings, load_settings
from .. import procs
from .results import MODES, NODE, READY_TIMEOUT_S, TOOL


@contextlib.asynccontextmanager
async def agent_process(settings: Settings, ports: dict[WireTls, int], log: Path) -> AsyncIterator[int]:
    """The agents of every mode in one process of their own, until the block ends; yields its pid."""
    spec = ",".join(f"{m}={p}" for m, p in ports.items())
    with log.open("wb") as err:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "gaiamesh.bench.tls.agents", "--serve-agents", spec,
            env=child_env(settings), stdout=asyncio.subprocess.PIPE, stderr=err,
        )  # fmt: skip
    try:
        await procs.ready(proc, log, "agent process", READY_TIMEOUT_S)
        yield proc.pid
    finally:
        await procs.stop(proc)


async def _serve_agents(ports: dict[WireTls, int]) -> None:
    """The child's side: one MeshAgent a mode (the same node, each with its own port and TLS),
    until SIGTERM. ``ready`` on standard output once all of them listen."""
    from ...agents.agent import MeshAgent
    from ...agents.catalog import get_tool

    base = load_settings()  # the parent's settings, from the environment child_env wrote
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    agents = [MeshAgent(base.model_copy(update={"wire_tls": m, "port": p, "node_id": NODE, "tool": TOOL,
                                                "workspace_root": Path(base.workspace_root) / m}), get_tool(TOOL))
              for m, p in ports.items()]  # fmt: skip
    async with asyncio.TaskGroup() as tasks:
        for agent in agents:
            tasks.create_task(agent.serve(stop))
        await asyncio.gather(*(a.listening.wait() for a in agents))
        freeze()
        print("ready", flush=True)


def _child_main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] != "--serve-agents":
        print("usage: python -m gaiamesh.bench.tls.agents --serve-agents off=PORT,tls=PORT,mtls=PORT", file=sys.stderr)
        return 2
    # warnings only: a log line per connection would be the agent's CPU, not TLS's
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    ports: dict[WireTls, int] = {}
    for item in argv[1].split(","):
        name, port = item.split("=")
        mode = next((m for m in MODES if m == name), None)
        if mode is None:
            print(f"unknown mode {name!r}; choose from {', '.join(MODES)}", file=sys.stderr)
            return 2
        ports[mode] = int(port)
    asyncio.run(_serve_agents(ports))
    return 0


def freeze() -> None:
    """Out of the collector's sight: everything alive now (imports, agents, settings), so that a
    full collection in a burst walks only what was made since (``run.py``'s docstring)."""
    gc.collect()  # garbage left now would be kept for good once frozen
    gc.freeze()


if __name__ == "__main__":  # the bench's agent process (agent_process starts it)
    raise SystemExit(_child_main(sys.argv[1:]))
