"""Issue 61's check: the replayed matrix run several times with the code before the pass and
after it, every metrics.json field of every run compared. A field that differs between two runs
of the code BEFORE is noise (times, ids, zlib's output length over random ids, TCP segmentation
and connection reuse, an SDK's chunking): per (strategy, transport, protocol) where it varied
there (the strict rule), or anywhere (the loose rule). Every other field must be equal.

usage: python compare.py BEFORE1 BEFORE2 ... -- AFTER1 AFTER2 ...   (each a matrix.sh --out)"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

Key = tuple[Any, ...]


def runs(root: Path) -> dict[Key, dict[str, Any]]:
    """Every run's metrics.json under ``root``, keyed by strategy, transport, protocol, task."""
    out: dict[Key, dict[str, Any]] = {}
    for path in sorted(root.rglob("metrics.json")):
        m = json.loads(path.read_text())
        key = (m["strategy"], m["transport"], m["protocol"], m["task_id"], path.parent.parent.name)
        assert key not in out, f"two runs of {key}"
        out[key] = m
    return out


def diff(a: Any, b: Any, path: str = "") -> Iterator[str]:
    """The paths where ``a`` and ``b`` differ (a key's order too), list indices as []."""
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            yield f"{path} (keys)"
        for k in a.keys() & b.keys():
            yield from diff(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            yield f"{path} (length)"
        for x, y in zip(a, b):
            yield from diff(x, y, f"{path}[]")
    elif a != b:
        yield path


def main(argv: list[str]) -> None:
    cut = argv.index("--")
    befores = [runs(Path(p)) for p in argv[:cut]]
    afters = [runs(Path(p)) for p in argv[cut + 1 :]]
    base = befores[0]
    assert all(set(o) == set(base) for o in befores + afters), "a run is missing on one side"
    noise: dict[Key, set[str]] = defaultdict(set)
    for other in befores[1:]:
        for k in base:
            noise[k[:3]] |= set(diff(base[k], other[k]))
    anywhere = set().union(*noise.values())
    print(f"{len(befores)} matrices before, {len(afters)} after, {len(base)} runs each")
    seen = Counter(f for fields in noise.values() for f in fields)
    print(f"noise (of {len(noise)} combinations): " + ", ".join(f"{f} {n}" for f, n in sorted(seen.items())))
    for i, after in enumerate(afters, 1):
        strict: Counter[tuple[Key, str]] = Counter()
        loose = 0
        for k in base:
            for f in set(diff(base[k], after[k])):
                strict[(k[:3], f)] += f not in noise[k[:3]]
                loose += f not in anywhere
        print(f"after {i}: fields differing outside their combination's noise {sum(strict.values())}, "
              f"outside any noise {loose}")
        for (combo, f), n in sorted(strict.items()):
            if n:
                print(f"   {'/'.join(combo)} {f}: {n} run(s)")


if __name__ == "__main__":
    main(sys.argv[1:])
