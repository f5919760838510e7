"""Write a pinned requirements file from a `pip install --dry-run --report` JSON report."""

import json
import sys

report, target = sys.argv[1], sys.argv[2]
names = sorted(
    f"{i['metadata']['name'].lower()}=={i['metadata']['version']}" for i in json.load(open(report))["install"]
)
src = target.rsplit("/", 1)[-1].replace(".txt", ".in")
with open(target, "w") as f:
    f.write(f"# Pinned from {src} (resolved with pip --dry-run --report); regenerate with `make lock`.\n")
    f.write("\n".join(names) + "\n")
