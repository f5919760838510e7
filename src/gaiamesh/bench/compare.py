"""``gaiamesh bench``: every task under every strategy and protocol, repeated; a CSV, a summary
table and a plot. With more than one strategy, rows are grouped as ``strategy · protocol``."""

from __future__ import annotations

import asyncio
import csv
import json
import os
import re
import statistics
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..agents.teams import TEAMS, agent_specs, lineup
from ..deploy.local import ProcessGroup, model_server, own_team, web_server
from ..evaluation.finish import run_and_finish
from ..evaluation.metrics import RunMetrics
from ..mesh.protocols import generate_keys
from ..mesh.relay import MeshNetwork
from ..mesh.wireend import WireLayers
from ..settings import Settings
from ..tasks import Task
from . import fairness, schedule
from . import stats as ci
from .baseline import run_baseline
from .load import LoadProbe

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

# one CSV column per field of metrics.json, and the share of the answer's decisions the model made
# and, on the native wire, its layers below the packet (empty for a run on the relay's WebSocket)
LAYERS = list(WireLayers.model_fields)
COLUMNS = ["repeat", *RunMetrics.columns(), *LAYERS, "model_share", "order", "load_1m", "cpu_other", "steal_pct",
           "containers", "contended"]  # fmt: skip
SUMMARY = [
    ("bytes_tx", "median"), ("bytes_rx", "median"), ("header_overhead", "median"), ("pkt_cnt", "median"),
    ("elapsed_ms", "median"), ("llm_ms", "median"), ("token_sum", "median"), ("model_share", "mean"),
    ("network_share", "median"), ("decode_us_p50", "median"), ("decode_us_p95", "median"),
    ("encode_us_p50", "median"), ("encode_us_p95", "median"), ("bytes_per_msg", "median"), ("header_share", "median"),
    ("http_tx", "median"), ("http_rx", "median"), ("connections", "median"),
    ("quality_score", "mean"), ("exact_match", "mean"), ("rouge_l", "mean"), ("gaia_match", "mean"),
    ("squad_em", "mean"), ("squad_f1", "mean"),
]  # fmt: skip
SCORES = ("model_share", "network_share", "header_share", "quality_score", "exact_match", "rouge_l", "gaia_match", "squad_em", "squad_f1")
SHORT = {
    "bytes_tx": "tx B", "bytes_rx": "rx B", "header_overhead": "hdr B", "pkt_cnt": "pkts", "elapsed_ms": "ms",
    "llm_ms": "llm ms", "token_sum": "tokens", "model_share": "model", "network_share": "net",
    "decode_us_p50": "dec µs", "decode_us_p95": "dec p95", "encode_us_p50": "enc µs", "encode_us_p95": "enc p95",
    "bytes_per_msg": "B/msg", "header_share": "hdr %", "http_tx": "http tx B", "http_rx": "http rx B",
    "connections": "conns",
    "quality_score": "quality", "exact_match": "EM", "rouge_l": "ROUGE-L", "gaia_match": "GAIA",
    "squad_em": "SQuAD EM", "squad_f1": "SQuAD F1",
}  # fmt: skip
MICROSECONDS = ("decode_us_p50", "decode_us_p95", "encode_us_p50", "encode_us_p95")
BASELINE = "baseline"
_REPEAT = re.compile(r"^.+-(\d{1,4})$")  # <task id>-<repeat>, as `make bench` names a run

console = Console()
if not console.is_terminal:
    console.width = 150  # logs and CI: keep the summary table readable


@contextmanager
def agents_running(settings: Settings, group: ProcessGroup, name: str) -> Iterator[None]:
    """Start one agent process per spec for this protocol; stop them afterwards."""
    started = group.start_team(settings, prefix=f"{name}-")
    try:
        yield
    finally:
        for label in started:
            proc = group.procs.pop(label)
            proc.terminate()
            proc.wait(timeout=10)


def _row(repeat: int, m: RunMetrics) -> dict[str, Any]:
    """One CSV row; baseline runs are grouped under the protocol name ``baseline``."""
    row = m.model_dump(exclude={"agents", "layers"}) | (m.layers.model_dump() if m.layers else {})
    made = list(m.made_by.values())
    row["model_share"] = round(made.count("model") / len(made), 3) if made else None  # which the model made
    protocol = BASELINE if m.mode == BASELINE else m.protocol
    return {c: "" if row.get(c) is None else row[c] for c in COLUMNS} | {"protocol": protocol, "repeat": repeat}


@dataclass(frozen=True)
class Variant:
    """What a bench compares: a strategy with some stages left out (``ablate``) under a protocol;
    ``protocol`` is :data:`BASELINE` for the single direct model call."""

    strategy: str
    ablate: str
    protocol: str
    transport: str = "relay"  # relay | native: the relay's WebSocket, or the protocol's own wire

    def name(self, strategies: int, ablations: int) -> str:
        if self.protocol == BASELINE:
            return BASELINE
        parts = [self.strategy] if strategies > 1 else []
        if ablations > 1:
            parts.append(f"no-{self.ablate.replace(',', '-')}" if self.ablate else "full")
        return "-".join([*parts, self.protocol, *(["native"] if self.transport == "native" else [])])


def _teams(settings: Settings, out: Path, base_port: int, keys: list[tuple[str, str]]) -> dict[tuple[str, str], Settings]:
    """One team per (strategy, ablate), each on its own ports with its own mesh token and keys
    for every keyed protocol: a team's agents speak every protocol (each run names its own), so
    all of them run at once and the protocols of one task run back to back."""
    teams = {}
    for strategy, ablate in keys:
        s = own_team(settings.model_copy(update={"strategy": strategy, "ablate": ablate}), base_port)
        nodes = ["network", *(a.node_id for a in agent_specs(s))]
        tag = f"{strategy}-{ablate.replace(',', '-') or 'full'}"
        teams[(strategy, ablate)] = s.model_copy(update={"keys_dir": generate_keys(out / "keys" / tag, nodes)})
        if base_port:
            base_port += len(TEAMS[strategy])
    return teams


def _one(variant: Variant, team: Settings, task: Task, run_dir: Path) -> RunMetrics:
    if variant.protocol == BASELINE:
        return asyncio.run(run_baseline(team, task, run_dir))
    team = team.model_copy(update={"protocol": variant.protocol, "transport": variant.transport})
    return asyncio.run(run_and_finish(MeshNetwork(team, task, run_dir, quiet=True, lineup=lineup(team))))


def run_bench(
    settings: Settings,
    tasks: list[Task],
    protocols: list[str],
    repeat: int,
    out: Path,
    base_port: int,
    baseline: bool,
    strategies: list[str] | None = None,
    ablations: list[str] | None = None,
    seed: int = 0,
    transports: list[str] | None = None,
    warm_up: bool = True,
) -> list[dict[str, Any]]:
    """Run the matrix locally (model server, agents as processes, relay in-process): a warm-up
    run per team first (not counted; ``warm_up=False`` leaves it out), then every variant of
    each task back to back in a seeded shuffled order (``schedule.py``), each run with the
    machine's load beside it (``load.py``).
    ``ablations``: ABLATE values to compare (``""`` is the full team); ``transports``: relay,
    native (default: TRANSPORT)."""
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    strategies = strategies or [settings.strategy]
    ablations = ablations or [settings.ablate]
    keys = [(s, a) for s in strategies for a in ablations]
    transports = transports or [settings.transport]
    variants = [Variant(s, a, p, t) for s, a in keys for p in protocols for t in transports]
    if "native" in transports:  # the agents load the native protocols' SDKs before the first run
        settings = settings.model_copy(update={"native_preload": ",".join(protocols)})
    variants += [Variant(*keys[0], BASELINE)] if baseline else []  # a direct call: no team, any team's settings
    slots = schedule.interleaved(tasks, variants, repeat, seed)
    group = ProcessGroup(out / "logs")
    probe = LoadProbe(lambda: [os.getpid(), *group.pids()])
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    try:
        with model_server(settings, group), ExitStack() as running, Progress(*columns, console=console) as progress:
            teams = _teams(settings, out, base_port, keys)
            for key, team in teams.items():
                running.enter_context(web_server(team, group))
                running.enter_context(agents_running(team, group, "-".join(key).rstrip("-")))
            warming = teams if warm_up else {}  # untimed: cold processes and caches would pass for the first protocol's cost
            bar = progress.add_task("warm-up", total=len(slots) + len(warming) * len(transports))
            for key, team in warming.items():
                progress.update(bar, description=f"warm-up {'-'.join(key).rstrip('-')}")
                for transport in transports:
                    _one(Variant(*key, protocols[0], transport), team, tasks[0],
                         out / "warm-up" / "-".join([*key, transport]).replace("--", "-"))  # fmt: skip
                progress.advance(bar)
            for slot in slots:
                v = slot.variant
                name = v.name(len(strategies), len(ablations))
                progress.update(bar, description=f"{name:<14} {slot.task.task_id:<22} #{slot.repeat}")
                probe.start()
                metrics = _one(v, teams[(v.strategy, v.ablate)], slot.task, out / "runs" / name / f"{slot.task.task_id}-{slot.repeat}")
                rows.append(_row(slot.repeat, metrics) | probe.stop().row() | {"order": slot.order})
                progress.advance(bar)
    finally:
        group.stop_all()
    write_reports(rows, out, seed)
    return rows


def collect(root: Path) -> list[dict[str, Any]]:
    """Rows from every ``metrics.json`` under ``root`` (for runs made on the compose stack).
    A run found twice (the same ``run_id``: ``gaiamesh submit --out`` saved a copy beside the
    service's own ``runs/<run id>/``) counts once; the console says how many copies were skipped."""
    rows = []
    seen: Counter[tuple[str | None, ...]] = Counter()
    runs: set[str] = set()
    copies = 0
    for path in sorted(root.rglob("metrics.json")):
        metrics = RunMetrics.read(path)
        if metrics.run_id and metrics.run_id in runs:
            copies += 1
            continue
        runs.add(metrics.run_id)
        # A run's repeat number: `make bench` names its folders <task>-<repeat>; any other folder
        # (the service's runs/<run id>/, a user's own) counts the runs of each task and variant.
        variant = (metrics.task_id, metrics.mode, metrics.strategy, metrics.protocol, metrics.transport, metrics.ablated)
        seen[variant] += 1
        named = _REPEAT.match(path.parent.name)
        rows.append(_row(int(named.group(1)) if named else seen[variant], metrics))
    if copies:
        console.print(f"skipped {copies} duplicate run{'s' if copies > 1 else ''}: "
                      "the same run_id, already counted from another folder")
    return rows


def label(row: dict[str, Any], strategies: int, ablations: int = 1) -> str:
    """The group a row is summarised in: its protocol, prefixed by its strategy and by the
    stages left out when a bench compares more than one of them."""
    if row["protocol"] == BASELINE:
        return BASELINE
    parts = [row.get("strategy") or "pipeline"] if strategies > 1 else []
    if ablations > 1:
        parts.append(f"without {row['ablated'].replace(',', ', ')}" if row.get("ablated") else "all stages")
    wire = " (native)" if row.get("transport") == "native" else ""
    return " · ".join([*parts, f"{row['protocol']}{wire}"])


def labeler(rows: list[dict[str, Any]]) -> ci.Label:
    """The group of a row among these ``rows`` (strategy and stages named where they vary)."""
    strategies = len({r.get("strategy") or "pipeline" for r in rows if r["protocol"] != BASELINE})
    ablations = len({r.get("ablated") or "" for r in rows if r["protocol"] != BASELINE})
    return lambda row: label(dict(row), strategies, ablations)


def summarize(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per protocol (and strategy): medians of the traffic and time columns, means of the
    quality columns."""
    out: dict[str, dict[str, float]] = {}
    group_of = labeler(rows)
    for protocol in dict.fromkeys(group_of(r) for r in rows):
        group = [r for r in rows if group_of(r) == protocol]
        stats: dict[str, float] = {"runs": len(group), "ok": sum(r["status"] == "ok" for r in group)}
        for col, how in SUMMARY:
            values = [float(r[col]) for r in group if r.get(col) not in ("", None)]
            if values:
                stats[col] = statistics.median(values) if how == "median" else statistics.fmean(values)
        out[protocol] = stats
    return out


def _fmt(col: str, v: float | None) -> str:
    if v is None:
        return "–"
    if col in SCORES:
        return f"{v:.3f}"
    if col in MICROSECONDS:
        return f"{v:,.1f}"
    return f"{v:,.0f}"


def summary_markdown(summary: dict[str, dict[str, float]]) -> str:
    cols = ["runs", "ok"] + [c for c, _ in SUMMARY]
    head = "| strategy · protocol | " if any(" · " in k for k in summary) else "| protocol | "
    head += " | ".join(f"{c} ({how})" if c not in ("runs", "ok") else c for c, how in
                                       [("runs", ""), ("ok", "")] + SUMMARY) + " |"  # fmt: skip
    lines = [head, "|" + "---|" * (len(cols) + 1)]
    for protocol, stats in summary.items():
        lines.append(f"| {protocol} | " + " | ".join(_fmt(c, stats.get(c)) for c in cols) + " |")
    return "\n".join(lines) + "\n"


def write_reports(rows: list[dict[str, Any]], out: Path, seed: int | None = None, how: str = "") -> None:
    """``results.csv``, ``summary.md`` and ``comparison.png`` in ``out``; the table is printed too.
    ``seed``: the order's seed, where this bench chose the order (None: rows from folders);
    ``how``: a paragraph on how the model was reached (``make bench``: record + replay, or live)."""
    out.mkdir(parents=True, exist_ok=True)
    with (out / "results.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    summary = summarize(rows)
    group_of = labeler(rows)
    means, diffs = ci.intervals(rows, group_of), ci.differences(rows, group_of)
    (out / "stats.json").write_text(json.dumps({
        "level": ci.LEVEL, "resamples": ci.RESAMPLES, "reference": ci.REFERENCE,
        "intervals": ci.as_json(means), "differences": ci.as_json(diffs),
    }, indent=2) + "\n")  # fmt: skip
    contended = fairness.contended_runs(rows, group_of)
    backends = ", ".join(sorted({str(r.get("backend")) for r in rows if r.get("backend")})) or "unknown"
    (out / "summary.md").write_text(
        "# gaiamesh bench summary\n\n" + fairness.how_it_ran(rows, seed, backends) + how
        + "Medians per protocol over all runs (quality: means). "
        "`network_share` = 1 - llm_ms / elapsed_ms.\n\n" + summary_markdown(summary)
        + fairness.load_section(rows, group_of) + fairness.time_section(diffs, contended)
        + INTERVALS_NOTE + ci.markdown(means)
        + (DIFFERENCES_NOTE + ci.markdown(diffs, signed=True) if diffs else "")
    )
    plot(summary, out / "comparison.png", means)
    for table in [*summary_tables(summary, console.width), *intervals_tables(means, diffs, console.width)]:
        console.print(table)
    for group, d in diffs.items():  # what each time difference from json can be said to be
        console.print(f"time, {group} - {ci.REFERENCE}: {ci.time_verdict(d, contended.get(group, 0))}")


def summary_tables(summary: dict[str, dict[str, float]], width: int) -> list[Table]:
    """The printed summary (medians; scores: means), as many tables as ``width`` needs."""
    cols = ["runs", "ok", *(c for c, _ in SUMMARY)]
    # one short header per summary column, in SUMMARY's order (a list of its own had drifted
    # from it: tokens and the model's share printed under the network and quality headers)
    headers = ["runs", "ok", *(SHORT[c] for c, _ in SUMMARY)]
    rows = {group: [_fmt(c, stats.get(c)) for c in cols] for group, stats in summary.items()}
    key = "strategy · protocol" if any(" · " in group for group in summary) else "protocol"
    return fitted("gaiamesh bench (medians; scores: means)", key, headers, rows, width)


def _packed(spans: list[int], room: int) -> list[list[int]]:
    """Column indexes in order, cut into runs of at most ``room`` characters (a wider column alone)."""
    parts: list[list[int]] = [[]]
    for i, span in enumerate(spans):
        if parts[-1] and sum(spans[j] for j in parts[-1]) + span > room:
            parts.append([])
        parts[-1].append(i)
    return parts


def intervals_tables(
    means: dict[str, dict[str, ci.Interval]], diffs: dict[str, dict[str, ci.Interval]], width: int
) -> list[Table]:
    """Quality and bytes per run, each mean with its 95% interval, and the difference from json."""

    def cell(i: ci.Interval | None, digits: int) -> str:
        return "–" if i is None else f"{i.mean:,.{digits}f} [{i.low:,.{digits}f}, {i.high:,.{digits}f}]"

    headers = ["quality", "bytes", f"quality - {ci.REFERENCE}", f"bytes - {ci.REFERENCE}"]
    rows = {}
    for group, got in means.items():
        d = diffs.get(group, {})
        rows[group] = [cell(got.get("quality_score"), 3), cell(got.get("bytes"), 0),
                       cell(d.get("quality_score"), 3), cell(d.get("bytes"), 0)]  # fmt: skip
    title = f"means with 95% intervals; difference from {ci.REFERENCE}, run by run"
    return fitted(title, "group", headers, rows, width)


def fitted(title: str, key: str, headers: list[str], rows: dict[str, list[str]], width: int) -> list[Table]:
    """``rows`` (one per group, its cells under ``headers``) as tables of at most ``width``
    characters: the group's column, never folded, starts each, and the other columns follow
    in order, as many as fit whole, then the next table (a terminal's 80 columns had cut every
    cell to one letter and an ellipsis)."""
    spans = [max([len(h), *(len(r[i]) for r in rows.values())]) + 3 for i, h in enumerate(headers)]
    room = width - 1 - (max([len(key), *map(len, rows)]) + 3)  # a cell: its text, 2 of padding, 1 of rule
    parts = _packed(spans, room)
    for narrower in range(room - 1, 0, -1):  # as many tables, with the columns spread evenly over them
        tried = _packed(spans, narrower)
        if len(tried) > len(parts):
            break
        parts = tried
    tables = []
    for n, part in enumerate(parts, 1):
        table = Table(title=title if len(parts) == 1 else f"{title} ({n}/{len(parts)})")
        table.add_column(key, no_wrap=True)
        for i in part:
            table.add_column(headers[i], justify="right", no_wrap=True)
        for group, cells in rows.items():
            table.add_row(group, *(cells[i] for i in part))
        tables.append(table)
    return tables


INTERVALS_NOTE = (
    "\n## Means with 95% intervals\n\nBootstrap over tasks, then each task's repeats "
    f"({ci.RESAMPLES} draws; see docs/benchmarks.md). `bytes` = tx + rx per run; "
    "`header_share` = header bytes / bytes.\n\n"
)
DIFFERENCES_NOTE = (
    f"\n## Difference from `{ci.REFERENCE}`, run by run\n\nEach run minus the same task and "
    f"repeat under `{ci.REFERENCE}` (same strategy), mean and 95% interval: an interval that "
    "holds 0 is no difference these runs can tell.\n\n"
)


HEADROOM = 1.25  # a legend's panel reaches this many times its tallest bar: the legend's row lies above
NO_PLOT = "no plot: matplotlib is not installed here, so {name} was not written (the tables were)"


def plot(
    summary: dict[str, dict[str, float]], path: Path, means: dict[str, dict[str, ci.Interval]] | None = None
) -> bool:
    """Four panels: bytes on the wire (header part hatched), time, network share, quality (with
    its 95% interval where ``means`` has one). Without matplotlib: no plot, one line that says
    so, and False."""
    try:
        import matplotlib
    except ImportError:
        console.print(NO_PLOT.format(name=path.name))
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = figure(summary, means)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def quality_title(groups: list[str]) -> str:
    """The quality panel's title: the baseline is named only where a baseline was run."""
    title = "quality_score (mean, 95% interval)"
    return title + ("\nbaseline: one direct model call" if BASELINE in groups else "")


def _legend_above(ax: Axes, tallest: float) -> None:
    """The legend in one row above the tallest bar: the axis reaches ``HEADROOM`` times that bar,
    so the legend neither hides a bar's top (matplotlib's 5 % margin left it under the legend,
    as if cut) nor runs off the axis."""
    ax.set_ylim(0, max(tallest, 1.0) * HEADROOM)
    ax.legend(loc="upper center", ncols=2, frameon=False)


def figure(
    summary: dict[str, dict[str, float]], means: dict[str, dict[str, ci.Interval]] | None = None
) -> Figure:
    """The comparison's figure (a matplotlib ``Figure``; ``plot`` saves it)."""
    import matplotlib.pyplot as plt

    mesh = {p: s for p, s in summary.items() if p != BASELINE}
    names = list(mesh)
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    wire = [mesh[p].get("bytes_tx", 0) + mesh[p].get("bytes_rx", 0) for p in names]
    header = [mesh[p].get("header_overhead", 0) for p in names]
    ax = axes[0][0]
    ax.bar(names, [w - h for w, h in zip(wire, header, strict=True)], label="payload", color="#4C72B0")
    ax.bar(names, header, bottom=[w - h for w, h in zip(wire, header, strict=True)], label="protocol header",
           color="#DD8452", hatch="//")  # fmt: skip
    ax.set_title("bytes on the wire per run (tx + rx, median)")
    _legend_above(ax, max(wire, default=0))
    ax = axes[0][1]
    ax.bar(names, [mesh[p].get("elapsed_ms", 0) for p in names], label="elapsed", color="#55A868")
    ax.bar(
        names,
        [mesh[p].get("llm_ms", 0) for p in names],
        label="inside model calls",
        color="#8172B3",
        width=0.5,
    )
    ax.set_title("time per run, ms (median)")
    # the model's time is summed over agents that may wait on it side by side: it can pass elapsed
    _legend_above(ax, max((mesh[p].get(k, 0) for p in names for k in ("elapsed_ms", "llm_ms")), default=0))
    ax = axes[1][0]
    ax.bar(names, [100 * mesh[p].get("network_share", 0) for p in names], color="#C44E52")
    ax.set_title("network share of wall time, % (median)")
    ax = axes[1][1]
    qual_names = list(summary)
    ax.bar(qual_names, [summary[p].get("quality_score", 0) for p in qual_names],
           color=["#937860" if p == BASELINE else "#64B5CD" for p in qual_names])  # fmt: skip
    spans = [(means or {}).get(p, {}).get("quality_score") for p in qual_names]
    if any(spans):
        xs = [i for i, sp in enumerate(spans) if sp]
        ax.errorbar(xs, [sp.mean for sp in spans if sp],
                    yerr=[[sp.mean - sp.low for sp in spans if sp], [sp.high - sp.mean for sp in spans if sp]],
                    fmt="none", ecolor="black", capsize=4)  # fmt: skip
    ax.set_ylim(0, 1.08)  # a perfect score's bar and its interval's cap stay inside the axis
    ax.set_title(quality_title(qual_names))
    for a in axes.flat:
        a.tick_params(axis="x", rotation=20)
    fig.suptitle("Gaia Mesh: " + ("strategy and protocol" if any(" · " in n for n in names) else "protocol") + " comparison")
    fig.tight_layout()
    return fig
