"""The tables of docs/results/2026-11-27-native-storms-faults.md, from the folders of
`gaiamesh bench-failstorm` (named PROTOCOL-TRANSPORT-EVERY) and of `gaiamesh bench-faults`
(``python docs/results/2026-11-27-native-storms-faults-tables.py STORMS_DIR [FAULTS_DIR ...]``),
and the plot of retention, relay beside native, at both paces (STORMS_DIR/retention.png).

A storm run that ended other than ok is described by its status and the name of the error its
protocol's client raised (the word before the first colon of the error's last part)."""

from __future__ import annotations

import collections
import json
import re
import statistics
import sys
from pathlib import Path

PROTOCOLS = ("json", "a2a", "acp", "anp", "agora", "mcp")


def cause(error: str | None) -> str:
    """The client's exception name in a run's error and the last thing it said ("... agent 0:
    POST ...: RemoteProtocolError: Server disconnected ..." -> "RemoteProtocolError: Server disconnected ...")."""
    names = re.findall(r"\b([A-Z][A-Za-z0-9]*(?:Error|Exception|Timeout))\b", error or "")
    said = (error or "?").rsplit(": ", 1)[-1].rstrip(".")[:60]
    return f"{names[-1]}: {said}" if names else said


def storm_row(folder: Path) -> str:
    data = json.loads((folder / "failstorm.json").read_text())
    s = data["summary"]
    runs = [json.loads(p.read_text()) for p in sorted((folder / "storm").glob("**/metrics.json"))]
    causes = collections.Counter(f"{m['status']} ({cause(m.get('error'))})" for m in runs if m["status"] != "ok")
    calm = {json.loads(p.read_text())["task_id"]: json.loads(p.read_text())["wall_ms"]
            for p in (folder / "calm").glob("**/metrics.json")}  # fmt: skip
    added = [m["wall_ms"] - calm[m["task_id"]] for m in runs if m["status"] == "ok" and m["task_id"] in calm]
    p, t, every = folder.name.split("-")
    return (f"| {p} | {t} | {every} | {s['kills']} | {s['retention']:.2f} | {s['storm_runs'] - len(s['runs_not_ok'])}"
            f"/{s['storm_runs']} | {len(s['answers_changed'])} | {s['frames_lost']} | {s['frames_undelivered']} | "
            f"{statistics.median(added) / 1000 if added else 0:.2f} | {'agree' if data['audits_ok'] else 'DISAGREE'} | "
            f"{', '.join(f'{n}× {k}' for k, n in causes.most_common()) or '–'} |")


def storms(root: Path) -> None:
    print("| protocol | transport | every s | kills | retention | storm runs ok | answers changed | frames lost "
          "| undelivered | time added s (median, ok runs) | audits | how the other runs ended |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for every in ("15", "5"):
        for p in PROTOCOLS:
            for t in ("relay", "native"):
                folder = root / f"{p}-{t}-{every}"
                if (folder / "failstorm.json").is_file():
                    print(storm_row(folder))


def faults(folders: list[Path]) -> None:
    """bench-faults' runs, one folder per transport, protocol by protocol, relay beside native. Time
    added is recomputed from each run's metrics.json as its whole time (``wall_ms``), connections
    included, against the same task calm (benches before 2026-11-28 summarized ``elapsed_ms``,
    which on a protocol's own wire misses a first request the fault held)."""
    runs: dict[tuple[str, str, str], dict[str, dict]] = {}
    for folder in folders:
        transport = "native" if "native" in folder.name else "relay"
        for path in (folder / "runs").glob("*/*/*/metrics.json"):
            protocol, fault, task = path.parent.relative_to(folder / "runs").parts
            runs.setdefault((protocol, fault, transport), {})[task] = json.loads(path.read_text())
    print("\n| protocol | fault | transport | runs | ok | same answer as calm | time added s (median) | (mean) "
          "| how the other runs ended | audits |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for p in PROTOCOLS:
        for fault in ("latency", "loss", "partition", "slow"):
            for t in ("relay", "native"):
                group, calm = runs.get((p, fault, t)), runs.get((p, "calm", t), {})
                if not group:
                    continue
                ok = [m for m in group.values() if m["status"] == "ok"]
                same = sum(m["prediction"] == calm[k]["prediction"] for k, m in group.items() if k in calm)
                added = [(m["wall_ms"] - calm[k]["wall_ms"]) / 1000 for k, m in group.items() if k in calm]
                ends = collections.Counter(f"{m['status']} ({cause(m.get('error'))})" for m in group.values()
                                           if m["status"] != "ok")  # fmt: skip
                print(f"| {p} | {fault} | {t} | {len(group)} | {len(ok)} | {same} | {statistics.median(added):.2f} | "
                      f"{statistics.fmean(added):.2f} | {', '.join(f'{n}× {k}' for k, n in ends.most_common()) or '–'} | "
                      f"{AUDITS.get((p, fault, t), '?')} |")


AUDITS: dict[tuple[str, str, str], str] = {}


def audits(folders: list[Path]) -> None:
    """Whether every run's audit agreed, from bench-faults' own summary (it audits each run)."""
    for folder in folders:
        transport = "native" if "native" in folder.name else "relay"
        for row in json.loads((folder / "faults.json").read_text())["summary"]:
            AUDITS[(row["protocol"], row["fault"], transport)] = "agree" if row["audits_ok"] else "DISAGREE"


def plot(root: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    for ax, every in zip(axes, ("15", "5"), strict=True):
        for k, t in enumerate(("relay", "native")):
            values = []
            for p in PROTOCOLS:
                f = root / f"{p}-{t}-{every}" / "failstorm.json"
                values.append(json.loads(f.read_text())["summary"]["retention"] if f.is_file() else 0)
            ax.bar([i + (k - 0.5) * 0.38 for i in range(len(PROTOCOLS))], values, width=0.38, label=f"TRANSPORT={t}")
        ax.set_xticks(range(len(PROTOCOLS)), PROTOCOLS)
        ax.set_title(f"3 of 8 agents killed every {every} s, back after 2 s")
        ax.set_ylim(0, 1.1)
    axes[0].set_ylabel("retention (storm quality / calm)")
    axes[0].legend(loc="lower left")
    fig.tight_layout()
    fig.savefig(root / "retention.png", dpi=110)


if __name__ == "__main__":
    storms(Path(sys.argv[1]))
    plot(Path(sys.argv[1]))
    if sys.argv[2:]:
        audits([Path(a) for a in sys.argv[2:]])
        faults([Path(a) for a in sys.argv[2:]])
