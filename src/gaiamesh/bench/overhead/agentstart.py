"""How long a local team takes to start, and on how much CPU: AGENT_START=fork against exec.

``python -m gaiamesh.bench.overhead.agentstart --out DIR [--rounds N] [--strategy S]``: each round starts
the strategy's team once each way (the order alternating between rounds), from nothing to every
agent answering ``/health``; the first round is a warm-up and is not counted. Per start: the wall
time, the CPU the team's processes used until then (agents and, forked, their zygote: the
kernel's accounting in /proc), and the machine's load average before it. Writes
``agent-start.csv`` and ``agent-start.json`` (medians, and the ratio exec/fork round by round,
with whether its range holds 1: within noise) and prints the table. The agents reach the model
server (the bundled one, started where none answers) as they would in a run."""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import time
from pathlib import Path

from ...agents.teams import agent_specs
from ...deploy.local import ProcessGroup, model_server, own_team, wait_until_answers
from ...settings import Settings

WAYS = ("fork", "exec")
_TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    """User and system CPU seconds of ``pid`` so far (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICK


def start_once(settings: Settings, way: str, logs: Path) -> dict[str, float | str]:
    team = own_team(settings.model_copy(update={"agent_start": way}))
    group = ProcessGroup(logs)
    load = os.getloadavg()[0]
    began = time.monotonic()
    try:
        names = group.start_team(team)
        for spec, name in zip(agent_specs(team), names, strict=True):
            wait_until_answers(f"http://127.0.0.1:{spec.port}/health", lambda n=name: group.check(n), 120, name)  # type: ignore[misc]
        wall = time.monotonic() - began
        pids = group.pids() + ([group.zygote_pid] if group.zygote_pid else [])
        return {"way": way, "agents": len(names), "wall_s": round(wall, 3),
                "cpu_s": round(sum(cpu_s(p) for p in pids), 3), "load_1m": round(load, 2)}  # fmt: skip
    finally:
        group.stop_all()


def summary(rows: list[dict[str, float | str]]) -> dict[str, dict[str, float | bool]]:
    """Medians per way, and exec/fork round by round (rows in pairs, one of each way per round)."""
    out: dict[str, dict[str, float | bool]] = {}
    for measure in ("wall_s", "cpu_s"):
        by = {w: [float(r[measure]) for r in rows if r["way"] == w] for w in WAYS}
        ratios = [e / f for f, e in zip(by["fork"], by["exec"], strict=True) if f > 0]
        out[measure] = {"fork": statistics.median(by["fork"]), "exec": statistics.median(by["exec"]),
                        "ratio_median": round(statistics.median(ratios), 2), "ratio_min": round(min(ratios), 2),
                        "ratio_max": round(max(ratios), 2), "within_noise": min(ratios) <= 1.0 <= max(ratios)}  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gaiamesh.bench.overhead.agentstart", description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--rounds", type=int, default=6, help="rounds counted, after one warm-up (default 6)")
    p.add_argument("--strategy", default="pipeline")
    args = p.parse_args(argv)
    settings = Settings(strategy=args.strategy)
    args.out.mkdir(parents=True, exist_ok=True)
    group = ProcessGroup(args.out / "logs")
    rows: list[dict[str, float | str]] = []
    try:
        with model_server(settings, group):
            for r in range(args.rounds + 1):
                order = WAYS if r % 2 == 0 else WAYS[::-1]
                done = [start_once(settings, w, args.out / "logs" / f"{r}-{w}") for w in order]
                print(f"round {r}{' (warm-up)' if r == 0 else ''}: " + ", ".join(
                    f"{d['way']} {d['wall_s']} s wall, {d['cpu_s']} s CPU" for d in done))  # fmt: skip
                if r:
                    rows.extend(sorted(done, key=lambda d: WAYS.index(str(d["way"]))))
    finally:
        group.stop_all()
    with (args.out / "agent-start.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    result = {"strategy": args.strategy, "rounds": args.rounds, "cpus": os.cpu_count(), "summary": summary(rows)}
    (args.out / "agent-start.json").write_text(json.dumps(result, indent=2) + "\n")
    print("| measure | fork (median) | exec (median) | exec / fork: median [min, max] |\n|---|---|---|---|")
    for measure, s in result["summary"].items():  # type: ignore[union-attr]
        noise = " (within noise)" if s["within_noise"] else ""
        print(f"| {measure} | {s['fork']:.2f} | {s['exec']:.2f} | {s['ratio_median']} [{s['ratio_min']}, {s['ratio_max']}]{noise} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
