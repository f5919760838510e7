"""How a deployed swarm stack scales: batches of runs with 1, 2, 4 ... replicas of every agent
service (``gaiamesh bench-swarm``, issue 36).

For each level, every agent service of the stack is scaled (``docker service scale``, on the
engine ``DOCKER_HOST`` names), and once every replica runs, a batch of runs goes through the
API with as many runs in flight as there are replicas (the service's ``MAX_CONCURRENT_RUNS``
must allow them). Per level: runs per minute, the runs' statuses, their time, the relay's cost
per frame (``decode_us``) and the frames' sizes. ``summarise`` is pure; ``measure`` does I/O.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from ...errors import RunError
from ...evaluation.metrics import RunMetrics
from ...service.client import submit
from ...service.models import RunRequest

POLL_S = 1.0  # between looks at the replica counts: swarm gives the CLI no event for them


@dataclass(frozen=True)
class Level:
    replicas: int
    runs: int
    ok: int
    wall_s: float
    runs_per_min: float
    elapsed_ms_p50: float
    decode_us_p50: float | None
    bytes_per_run_p50: float
    statuses: dict[str, int]


def summarise(replicas: int, wall_s: float, runs: list[RunMetrics]) -> Level:
    """One level's figures from its runs' metrics (pure)."""
    statuses: dict[str, int] = {}
    for m in runs:
        statuses[m.status] = statuses.get(m.status, 0) + 1
    decode = [m.decode_us_p50 for m in runs if m.decode_us_p50 is not None]
    return Level(
        replicas, len(runs), statuses.get("ok", 0), round(wall_s, 2), round(60 * len(runs) / wall_s, 2),
        round(statistics.median(m.elapsed_ms for m in runs), 1),
        round(statistics.median(decode), 1) if decode else None,
        statistics.median(m.bytes_tx + m.bytes_rx for m in runs), statuses,
    )  # fmt: skip


def _docker(*args: str) -> str:
    proc = subprocess.run(["docker", *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RunError(f"docker {' '.join(args[:3])} failed: {proc.stderr.strip()}")
    return proc.stdout


def agent_services(stack: str) -> list[str]:
    names = _docker("service", "ls", "--filter", f"label=com.docker.stack.namespace={stack}", "--format", "{{.Name}}")
    return [n for n in names.split() if n.startswith(f"{stack}_agent-")]


def scale(services: list[str], replicas: int, timeout: float, say: Callable[[str], None]) -> None:
    """Every service at ``replicas``, waiting until each replica runs."""
    _docker("service", "scale", "-d", *(f"{s}={replicas}" for s in services))
    deadline = time.monotonic() + timeout
    while True:
        counts = _docker("service", "ls", "--format", "{{.Name}} {{.Replicas}}").split("\n")
        short = [line for line in counts if line.split(" ")[0] in services and f"{replicas}/{replicas}" not in line]
        if not short:
            say(f"bench-swarm: {len(services)} agent services at {replicas} replicas each")
            return
        if time.monotonic() > deadline:
            raise RunError(f"not every replica started in {timeout:.0f} s: {short}")
        time.sleep(POLL_S)  # polling (see POLL_S)


def measure(url: str, key: str, stack: str, levels: list[int], runs: int, task: str, out: Path,
            say: Callable[[str], None] = print) -> list[Level]:  # fmt: skip
    """Scale, run, summarise each level; write ``swarm-scale.json`` into ``out``."""
    services = agent_services(stack)
    if not services:
        raise RunError(f"no agent services in the stack {stack!r} on this engine (is DOCKER_HOST its manager?)")
    results: list[Level] = []

    def one(_i: int) -> RunMetrics:
        _, metrics = submit(url, key, RunRequest(task=task), progress=lambda _line: None)
        if metrics is None:
            raise RunError("a run ended without metrics")
        return metrics

    for replicas in levels:
        scale(services, replicas, 300, say)
        t0 = time.monotonic()
        with ThreadPoolExecutor(max_workers=replicas) as pool:
            done = list(pool.map(one, range(runs)))
        level = summarise(replicas, time.monotonic() - t0, done)
        say(f"bench-swarm: {replicas} replicas: {level.runs_per_min} runs/min, {level.ok}/{level.runs} ok")
        results.append(level)
    scale(services, 1, 300, say)
    out.mkdir(parents=True, exist_ok=True)
    (out / "swarm-scale.json").write_text(json.dumps([asdict(r) for r in results], indent=2) + "\n")
    return results
