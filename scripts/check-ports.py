#!/usr/bin/env python3
"""Before `make up` starts anything: are the host ports the stack publishes free?

For each port taken by something other than this stack, say which port, who holds it, and
which .env variable moves it; exit 1 if any is taken. Ports this compose project already
publishes (the stack is up) are fine.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

# The package's own check (standard library only), so that make up and local commands name a
# port's holder alike: a container and its compose project, or a process and its pid.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
from gaiamesh.ports import holder, taken  # noqa: E402


def dotenv(path: Path) -> dict[str, str]:
    values: dict[str, str] = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            m = re.match(r"^\s*([A-Z_][A-Z0-9_]*)=(.*)$", line)
            if m:
                values[m.group(1)] = m.group(2).strip().strip("'\"")
    return values


def ours() -> set[int]:
    """Host ports this compose project's running containers already publish."""
    proc = subprocess.run(["docker", "compose", "ps", "--format", "json"], capture_output=True, text=True)
    ports: set[int] = set()
    for line in proc.stdout.splitlines():
        try:
            rows = json.loads(line)
        except json.JSONDecodeError:
            continue
        for row in rows if isinstance(rows, list) else [rows]:
            for pub in row.get("Publishers") or []:
                if pub.get("PublishedPort"):
                    ports.add(int(pub["PublishedPort"]))
    return ports


def main() -> int:
    env = {**dotenv(Path(".env")), **os.environ}
    wide = "--wide" in sys.argv
    # `make bench` runs its own stack on its own ports, moved by its own variables (in the
    # environment: `BENCH_SERVICE_PORT=8190 make bench`)
    bench = "--bench" in sys.argv
    service_var, prefix_var = ("BENCH_SERVICE_PORT", "BENCH_HOST_PORT_PREFIX") if bench else ("SERVICE_PORT", "HOST_PORT_PREFIX")
    where = "in the environment (make bench's own ports)" if bench else "in .env"
    prefix = env.get("HOST_PORT_PREFIX", "90")
    wanted = {int(env.get("SERVICE_PORT", "8080")): f"{service_var} (the network service's API and page)"}
    for n in range(8 if wide else 4):
        wanted[int(f"{prefix}0{n}")] = f"{prefix_var} (agents publish on {prefix}00-{prefix}0{7 if wide else 3})"
    if "orchestrated" in env.get("COMPOSE_PROFILES", "").split(","):
        for n in ("08", "09", "10"):  # the orchestrated team (compose profile `orchestrated`)
            wanted[int(f"{prefix}{n}")] = f"{prefix_var} (the orchestrated team publishes on {prefix}08-{prefix}10)"
    mine = ours()
    bad = [(p, why) for p, why in sorted(wanted.items()) if p not in mine and taken(p)]
    for port, why in bad:
        print(f"port 127.0.0.1:{port} is taken by {holder(port)}; set {why} {where} to move it", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
