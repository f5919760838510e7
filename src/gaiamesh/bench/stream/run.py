"""``gaiamesh stream``: a file of items through one long-lived team, a coordinator and N workers
(stream/team.py), in one run of the relay, as ProtocolBench's Streaming Queue.

The items travel to the coordinator in the run's ``doc_init`` (one JSON line each, so every
byte of the work list is on the wire and counted); the coordinator hands each to a worker
through the relay's sub-task queue and writes each item's fate as it ends. When the run ends,
this module reads the run's archive and writes, beside ``metrics.json`` (which holds the
coordinator's summary under ``stream``):

- ``items.csv``: one row per item (:mod:`gaiamesh.stream.records`), its bytes those of its own
  sub-task and result frames in the relay's frame log;
- ``stream.json``: :class:`StreamReport`, what ran and its figures.

The run's archive holds every model call the workers made, so ``--replay DIR`` answers the same
items identically (``--pace recorded``: each call takes the time it took).

``--team local`` (the default) starts the coordinator and N answerers beside the relay;
``--team deployed`` starts none and runs the relay here against the agents ``AGENTS`` names
(a compose or swarm stack's ``agent-coordinator`` and ``agent-answerer`` replicas): the plan
names the answerers DNS gives now (:func:`deployed_team`), as the relay will find them.
"""

from __future__ import annotations

import base64
import json
import statistics
import tarfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ...errors import ConfigError, FrameError, RunError, TaskError
from ...evaluation.metrics import RunMetrics, read_log
from ...evaluation.scoring import score
from ...evaluation.streams import Bytes, StormReport, StreamReport
from ...mesh.native import binding as native_binding
from ...mesh.protocols import get_adapter
from ...settings import RoutingMode, Settings
from ...stream.items import BOM, MAX_LINE_BYTES, StreamItem, read_items
from ...stream.plan import StreamPlan
from ...stream.records import FateLine, ItemRow, ItemsCsv
from ...stream.summary import latency, percentile, summarize
from ...stream.team import ANSWERER, COORDINATOR, ITEMS_FILE
from ...tasks import Task, discover_tasks
from ..storms.failstorm import Storm
from ..storms.stream import StreamStorm

Pace = Literal["recorded", "none"]


class StreamOptions(BaseModel):
    """What ``gaiamesh stream`` was asked (the command's options, typed once)."""

    model_config = ConfigDict(extra="forbid")

    tasks: str
    workers: int = 4  # local: the answerers to start; deployed: the first N found (0: all)
    team: Literal["local", "deployed"] = "local"
    limit: int = 0
    policy: Literal["dynamic", "round-robin"] = "dynamic"
    per_worker: int = 1
    replay: Path | None = None
    pace: Pace = "recorded"
    timeout: float = 3600.0
    # a fail-storm during the stream (bench/storms/stream.py): every storm_every s (0: none)
    # storm_kill workers SIGKILLed, each restarted storm_down s later; at most storm_limit kills
    storm_every: float = 0.0
    storm_kill: int = 1
    storm_down: float = 1.0
    storm_seed: int = 1
    storm_limit: int = 0


def collect_items(source: str, limit: int, budget: int) -> list[StreamItem]:
    """The items of ``source``: a JSONL of ``{"id", "q"}`` (ProtocolBench's queries), or any task
    set a run takes (folders, a task-set file), each task one item with its document and gold
    answers. The items reach the coordinator in one frame: more than ``budget`` bytes of them is
    a :class:`TaskError` as soon as the file passes it (the rest is never read)."""
    items: list[StreamItem] = []
    size = 0
    for item in _source(source, limit):
        size += len(item.line().encode()) + 1
        if size > budget:
            raise TaskError(
                f"{source}: a stream carries its items to the coordinator in one doc_init of at most "
                f"{budget:,} bytes of items (half MAX_FRAME_BYTES); the items after the first {len(items):,} "
                f"do not fit: stream the first N with --limit N, or raise MAX_FRAME_BYTES"
            )
        items.append(item)
    return items


def _source(source: str, limit: int) -> Iterator[StreamItem]:
    path = Path(source)
    if path.suffix == ".jsonl" and path.is_file() and _is_queries(path):
        yield from read_items(path, limit)
        return
    for n, task in enumerate(discover_tasks(source), start=1):
        if len(task.doc.encode()) > MAX_LINE_BYTES:
            raise TaskError(
                f"task {task.task_id}: a document of {len(task.doc.encode()):,} bytes; a stream's item holds at most {MAX_LINE_BYTES:,}"
            )
        yield StreamItem(id=task.task_id, q=task.question, doc=task.doc, answers=task.golds)
        if limit and n >= limit:
            return


def _is_queries(path: Path) -> bool:
    """Whether a JSONL file's first item is a question (``q``) rather than a task (``question``)."""
    with path.open("rb") as f:
        for raw in f:
            if raw.strip():
                try:
                    first = json.loads(raw.removeprefix(BOM))
                except (json.JSONDecodeError, UnicodeDecodeError):
                    return True  # read_items names the bad line
                return not isinstance(first, dict) or "question" not in first
    return True  # an empty file: read_items says so


def stream_task(items: list[StreamItem], folder: Path, source: str, plan: StreamPlan) -> Task:
    """The run's task: the plan and the items, one JSON line each, as the document of a question
    that has no gold answer of its own (each item is scored by itself)."""
    folder.mkdir(parents=True, exist_ok=True)
    doc = plan.line() + "\n" + "".join(item.line() + "\n" for item in items)
    question = f"Answer each of the {len(items)} items of {Path(source).name}"
    (folder / "doc.txt").write_text(doc, encoding="utf-8")
    (folder / "ground_truth.json").write_text(json.dumps({"question": question}), encoding="utf-8")
    return Task(folder.name, doc, question, "", folder)


def stream_settings(settings: Settings, options: StreamOptions, base_port: int, workspaces: Path) -> Settings:
    """The run's settings: a coordinator and ``options.workers`` answerers on consecutive free
    ports, the relay's queues addressed (``share``), the model live or replayed."""
    n = options.workers
    agents = ",".join(
        [
            f"0={COORDINATOR}@127.0.0.1:{base_port}",
            *(f"{i}={ANSWERER}@127.0.0.1:{base_port + i}" for i in range(1, n + 1)),
        ]
    )
    update: dict[str, object] = {"agents": agents, "workspace_root": workspaces}
    if options.replay is not None:
        update |= {"llm_backend": "replay", "replay_from": options.replay,
                   "replay_pace": "recorded" if options.pace == "recorded" else "instant"}  # fmt: skip
    return stream_run(settings, options).model_copy(update=update)


def stream_run(settings: Settings, options: StreamOptions) -> Settings:
    """What every stream's run is, local or deployed: the stream's team, the relay's queues
    addressed (``share``), the stream's own time limit."""
    update = {"strategy": "stream", "routing": RoutingMode.SHARE, "run_timeout": options.timeout}
    return settings.model_copy(update=update)


def local_plan(options: StreamOptions) -> StreamPlan:
    workers = tuple(str(i) for i in range(1, options.workers + 1))
    return StreamPlan(workers=workers, policy=options.policy, per_worker=options.per_worker)


def deployed_team(settings: Settings, options: StreamOptions) -> tuple[str, StreamPlan]:
    """The coordinator's node id and the plan, on a deployment: the agents of the stream's team
    that ``AGENTS`` names and that are there now (a ``dns:`` entry's replicas, as the relay
    finds them when the run starts). A :class:`ConfigError` when there is no coordinator or
    no answerer, or fewer answerers than ``options.workers``."""
    import asyncio

    from ...agents.teams import team_specs
    from ...mesh.discovery import present

    specs = asyncio.run(present(team_specs(settings), settings.connect_timeout))
    coordinators = [s.node_id for s in specs if s.tool == COORDINATOR]
    answerers = [s.node_id for s in specs if s.tool == ANSWERER]
    if len(coordinators) != 1 or not answerers:
        raise ConfigError(
            f"--team deployed: AGENTS gives {len(coordinators)} coordinators and {len(answerers)} answerers "
            "that are there now; a stream needs one coordinator and at least one answerer (compose: "
            "COMPOSE_PROFILES=stream; swarm: the stack runs agent-coordinator and agent-answerer)"
        )
    if options.workers > len(answerers):
        raise ConfigError(f"--team deployed --workers {options.workers}: the deployment has {len(answerers)} answerers")
    workers = tuple(answerers[: options.workers or None])
    return coordinators[0], StreamPlan(workers=workers, policy=options.policy, per_worker=options.per_worker)


def fate_lines(archive: Path, coordinator: str = "0") -> list[FateLine]:
    """The coordinator's ``items.jsonl`` in the run's archive (empty when the run never started)."""
    if not archive.is_file():
        return []
    with tarfile.open(archive) as tar:
        member = next((m for m in tar.getmembers() if m.name == f"workspaces/{coordinator}/{ITEMS_FILE}"), None)
        f = None if member is None else tar.extractfile(member)
        if f is None:
            return []
        return [FateLine.model_validate_json(line) for line in f.read().splitlines() if line.strip()]


def frame_bytes(out: Path, settings: Settings) -> tuple[dict[str, int], int]:
    """Each sub-task's bytes (its sub-task and result frames, in and out) by sub-task id, and the
    ``doc_init``'s, read from the frame log with the run's protocol (no freshness check: the
    frames are the relay's own record, read again)."""
    # The relay's wire logs each frame as the protocol encoded it; the native wire the packet in
    # the protocol's body, in its binding's inner encoding (as the relay reads it: mesh/relay.py).
    name = settings.protocol if settings.transport == "relay" else native_binding(settings.protocol).inner
    adapter = get_adapter(name, "network", Path(settings.keys_dir), replay_window_s=0)
    by_task: dict[str, int] = {}
    doc_init = 0
    for record in read_log(out / "frames.jsonl"):
        if record.type == "doc_init":
            doc_init += record.rx_bytes + record.tx_bytes
        if record.type not in ("subtask", "result") or record.status == "rejected":
            continue
        try:
            payload = adapter.decode(base64.b64decode(record.b64)).get("payload", {})
        except FrameError:  # a protocol's decoding error is one
            continue
        task_id = payload.get("sub_task_id") if isinstance(payload, dict) else None
        if isinstance(task_id, str):
            by_task[task_id] = by_task.get(task_id, 0) + record.rx_bytes + record.tx_bytes
    return by_task, doc_init


def write_outputs(out: Path, settings: Settings, options: StreamOptions, metrics: RunMetrics, sent: list[str],
                  plan: StreamPlan, coordinator: str = "0", storm: StormReport | None = None,
                  relay_cpu_s: float | None = None, memory_peak_mib: float | None = None) -> StreamReport:  # fmt: skip
    """``items.csv`` and ``stream.json`` from the run's archive and frame log; ``sent``: the ids
    of the items the stream was given, each of which must have exactly one fate."""
    lines = fate_lines(out / "run_artifacts.tar.gz", coordinator)
    told = Counter(line.id for line in lines)
    by_task, doc_init = frame_bytes(out, settings) if (out / "frames.jsonl").is_file() else ({}, 0)
    rows: list[ItemRow] = []
    spent = options.replay is None or options.pace == "recorded"
    with ItemsCsv(out / "items.csv") as csv_out:
        for line in lines:
            wire = sum(by_task.get(a.sub_task_id or "", 0) for a in line.attempts)
            quality = (
                score(settings.scorer, line.prediction or "", line.answers).quality_score
                if line.answers
                else None
            )
            row = ItemRow.of_line(line, wire, quality, model_spent=spent)
            csv_out.write(row)
            rows.append(row)
    workers = list(plan.workers)
    sizes = sorted(float(r.bytes) for r in rows if r.bytes)
    scored = [r.quality for r in rows if r.quality is not None]
    report = StreamReport(
        tasks=options.tasks, items=len(rows), workers=len(workers), policy=options.policy,
        per_worker=options.per_worker, protocol=settings.protocol, transport=settings.transport,
        backend=settings.llm_backend, replay=str(options.replay) if options.replay else None,
        pace=options.pace if options.replay else None, status=metrics.status, error=metrics.error,
        summary=summarize(lines, workers),
        service=latency(r.answered_s - r.sent_s for r in rows if r.answered_s is not None and r.sent_s is not None),
        model=latency(r.model_s for r in rows if r.model_s is not None),
        wire=latency(r.wire_s for r in rows if r.wire_s is not None),
        bytes=_bytes(sizes, doc_init, metrics, len(rows)) if sizes else None,
        decode_us_p50=metrics.decode_us_p50, decode_us_p95=metrics.decode_us_p95,
        quality=statistics.fmean(scored) if scored else None, scored=len(scored), wall_ms=metrics.wall_ms,
        sent=len(sent), unaccounted=sum(told[i] == 0 for i in sent), told_twice=sum(n > 1 for n in told.values()),
        storm=storm, relay_cpu_s=relay_cpu_s, memory_peak_mib=memory_peak_mib, frames=metrics.pkt_cnt,
        team=options.team, worker_ids=workers,
    )  # fmt: skip
    (out / "stream.json").write_text(report.model_dump_json(indent=2), encoding="utf-8")
    return report


def _bytes(sizes: list[float], doc_init: int, metrics: RunMetrics, items: int) -> Bytes:
    layers = metrics.layers
    return Bytes(
        mean=statistics.fmean(sizes), p50=percentile(sizes, 0.5), p95=percentile(sizes, 0.95), doc_init=doc_init,
        http_mean=None if layers is None else (layers.http_tx + layers.http_rx) / items,
        ip_tcp_mean=None if layers is None else layers.ip_tcp_header_bytes / items,
    )  # fmt: skip


def run_stream(settings: Settings, options: StreamOptions, out: Path) -> StreamReport:
    """The whole stream: items read, the team started (or found), one run, the outputs written."""
    items = collect_items(options.tasks, options.limit, settings.max_frame_bytes // 2)
    out.mkdir(parents=True, exist_ok=True)
    if options.team == "deployed":
        return _run_deployed(settings, options, out, items)
    return _run_local(settings, options, out, items)


def _run_local(settings: Settings, options: StreamOptions, out: Path, items: list[StreamItem]) -> StreamReport:
    from ...deploy.local import RelayWatch, free_port_block, run_local

    plan = local_plan(options)
    task = stream_task(items, out / "task", options.tasks, plan)
    base = free_port_block(options.workers + 1)
    run_settings = stream_settings(settings, options, base, (out / "workspaces").resolve())
    watch = _storm(options, out / "frames.jsonl") or RelayWatch()
    try:
        metrics = RunMetrics.read(run_local(run_settings, task, out, 0, watch))  # 0: the AGENTS above, checked free
    except RunError:
        if not (out / "metrics.json").is_file():
            raise
        metrics = RunMetrics.read(out / "metrics.json")
    sent = [item.id for item in items]
    storm = watch.report() if isinstance(watch, StreamStorm) else None
    return write_outputs(
        out, metrics_settings(run_settings, out), options, metrics, sent, plan, storm=storm,
        relay_cpu_s=watch.relay_cpu_s, memory_peak_mib=watch.memory_peak_mib,
    )  # fmt: skip


def _run_deployed(settings: Settings, options: StreamOptions, out: Path, items: list[StreamItem]) -> StreamReport:
    """The relay in this process, against the deployment's agents (its model backend is theirs:
    no --replay, and no storm, which kills local processes)."""
    import asyncio
    import resource

    from ...agents.teams import lineup
    from ...evaluation.finish import run_and_finish
    from ...mesh.relay import MeshNetwork

    if options.replay is not None or options.storm_every > 0:
        raise ConfigError("--team deployed: the deployment's agents answer with its own model backend (no --replay), "
                          "and a storm kills local workers (stop the deployment's replicas instead)")  # fmt: skip
    run_settings = stream_run(settings, options)
    coordinator, plan = deployed_team(run_settings, options)
    task = stream_task(items, out / "task", options.tasks, plan)
    before = resource.getrusage(resource.RUSAGE_SELF)
    net = MeshNetwork(run_settings, task, out, quiet=True, lineup=lineup(run_settings))
    metrics = asyncio.run(run_and_finish(net))
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    sent = [item.id for item in items]
    return write_outputs(out, run_settings, options, metrics, sent, plan, coordinator, relay_cpu_s=cpu)


def _storm(options: StreamOptions, frames: Path) -> StreamStorm | None:
    if options.storm_every <= 0:
        return None
    o = options
    storm = Storm(kill=o.storm_kill, every=o.storm_every, seed=o.storm_seed, limit=o.storm_limit)
    return StreamStorm(storm, o.storm_down, frames)


def metrics_settings(settings: Settings, out: Path) -> Settings:
    """The settings the run ran with (its keys are in ``out/keys`` for a keyed protocol)."""
    keys = out / "keys"
    return settings.model_copy(update={"keys_dir": keys}) if keys.is_dir() else settings
