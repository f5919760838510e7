"""Commands that run: a local run, the baseline, the containers' entry points (agent, relay, serve,
serve-model, serve-web) and `submit` to a running service."""

from __future__ import annotations

import argparse
import asyncio
import re
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, RunError, RunStatus, TaskError, run_status
from ..settings import TASK_STRATEGIES, Settings
from ..tasks import Task, load_task
from ..tasks.packed import document_from, read_stdin, task_from_tar
from .common import Subparsers, common_options, console, errors, settings_from, summary_table

if TYPE_CHECKING:
    from ..service.models import RunRequest


def _cmd_run(args: argparse.Namespace) -> int:
    from ..deploy.local import run_local
    from ..evaluation.finish import finish_run, logged
    from ..evaluation.metrics import RunMetrics
    from ..mesh.wireend import Ending

    settings = settings_from(args)
    task = load_task(args.task)
    out = Path(args.out or f"runs/{task.task_id}")
    try:
        metrics = RunMetrics.read(run_local(settings, task, out, args.base_port))
    except RunError as exc:  # metrics.json says how the run ended; main() says why, and exits 1
        finish_run(out, settings, task, Ending(run_status(exc), str(exc)), records=logged(out))
        raise
    console.print(summary_table(metrics, "gaiamesh run"))
    console.print(f"results: {out}/metrics.json, {out}/run_artifacts.tar.gz")
    if metrics.status != RunStatus.OK:
        errors.print(f"[red]run ended with status {metrics.status}: {metrics.error}[/red]")
        return 1
    return 0


def _cmd_baseline(args: argparse.Namespace) -> int:
    from ..bench.compare.baseline import run_baseline
    from ..deploy.local import ProcessGroup, model_server

    settings = settings_from(args)
    task = load_task(args.task)
    out = Path(args.out or f"runs/{task.task_id}-baseline")
    group = ProcessGroup(out / "logs")
    try:
        with model_server(settings, group):
            metrics = asyncio.run(run_baseline(settings, task, out))
    finally:
        group.stop_all()
    console.print(summary_table(metrics, "gaiamesh baseline"))
    return 0 if metrics.status == RunStatus.OK else 1


async def _until_signalled(coro_factory: Any) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await coro_factory(stop)


def _cmd_agent(args: argparse.Namespace) -> int:
    from ..agents.agent import MeshAgent
    from ..agents.catalog import get_tool

    settings = settings_from(args)
    agent = MeshAgent(settings, get_tool(settings.tool))

    async def checked(stop: asyncio.Event) -> None:
        await agent.check_model()  # a backend that cannot serve this configuration: one line, before any run
        await agent.serve(stop)

    asyncio.run(_until_signalled(checked))
    return 0


def _cmd_relay(args: argparse.Namespace) -> int:
    from ..agents.teams import lineup, settled
    from ..evaluation.finish import run_and_finish
    from ..mesh.relay import MeshNetwork

    settings = settled(settings_from(args))  # config.json names the agents even where AGENTS was left unset
    task = load_task(settings.task, settings.task_label)
    net = MeshNetwork(settings, task, Path(settings.out_dir), lineup=lineup(settings))
    metrics = asyncio.run(run_and_finish(net))
    if not args.no_summary:
        console.print(summary_table(metrics, "gaiamesh relay"))
    return 0 if metrics.status == RunStatus.OK else 1


def _cmd_serve_model(args: argparse.Namespace) -> int:
    from ..models.modelserver import serve

    settings = settings_from(args)
    serve(
        args.host,
        args.port,
        settings.model,
        settings.model_path,
        settings.model_ctx,
        settings.model_threads,
        memo=settings.model_memo,
    )
    return 0


def _cmd_serve_web(args: argparse.Namespace) -> int:
    import uvicorn

    from ..web.app import create_app

    console.print(
        f"offline web on http://{args.host}:{args.port} (pages from {args.tasks_dir} and the bundled ones)"
    )
    uvicorn.run(
        create_app(Path(args.tasks_dir)),
        host=args.host,
        port=args.port,
        log_level="warning",
        loop="asyncio",
        http="h11",
    )  # fmt: skip (named: acp-sdk brings uvloop and httptools)
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    from ..service import serve

    settings = settings_from(args)
    serve(settings)
    return 0


def _cmd_submit(args: argparse.Namespace) -> int:
    from ..service.models import RunRequest

    settings = settings_from(args)
    host = (
        "127.0.0.1" if settings.service_host in ("0.0.0.0", "::", "") else settings.service_host
    )  # a bind-all address
    url = (args.url or f"http://{host}:{settings.service_port}").rstrip("/")
    source = _submit_source(args, settings)
    if args.question and source.get("question") not in (None, args.question):
        source.pop("answers", None)  # the folder's gold answers its own question, not this one
    options = {"question": args.question, "answer": args.answer, "protocol": args.protocol, "routing": args.routing,
               "transport": args.transport, "strategy": args.strategy, "run_timeout": args.run_timeout}  # fmt: skip
    request = RunRequest.model_validate(source | {k: v for k, v in options.items() if v is not None})
    return submit_and_report(url, settings, request, Path(args.out) if args.out else None, args.back_within)


def submit_task(url: str, settings: Settings, out: Path | None) -> int:
    """Run the task ``make up`` runs (TASK) on the service at ``url``: ``gaiamesh submit`` with
    no options (``gaiamesh swarm-up`` ends with it)."""
    from ..service.models import RunRequest

    request = RunRequest.model_validate(
        _submit_source(argparse.Namespace(document=None, task=None), settings)
    )
    return submit_and_report(url, settings, request, out)


def submit_and_report(url: str, settings: Settings, request: RunRequest, out: Path | None,
                      back_within: float | None = None) -> int:  # fmt: skip
    """Start ``request`` on the service at ``url`` and follow it live; save its
    archive and metrics.json into ``out``; print the summary; 0 when the run ended ok."""
    from ..evaluation.finish import write_metrics
    from ..service.client import BACK_WITHIN_S, save_artifacts, submit

    if not settings.access_key:
        raise ConfigError("GAIAMESH_ACCESS_KEY is not set (it is in .env after make setup)")
    run, metrics = submit(url, settings.access_key, request, console.print, back_within or BACK_WITHIN_S)
    if out and metrics is not None:
        path = save_artifacts(url, settings.access_key, run.id, out)
        console.print(f"saved {path} and {write_metrics(metrics, out)}")
    if metrics is None:
        errors.print(f"[red]run {run.id} ended {run.state.value} without metrics: {run.error}[/red]")
        return 1
    console.print(summary_table(metrics, "gaiamesh submit"))
    if run.state.value != "finished":  # interrupted by a restart of the service, or cancelled
        errors.print(f"[red]run {run.id} ended {run.state.value}: {run.error}[/red]")
    console.print(
        f"run {run.id}: metrics.json and run_artifacts.tar.gz in runs/{run.id}/ under the service's OUT_DIR; "
        f"API {url}/openapi.json"
    )
    return 0 if metrics.status == RunStatus.OK else 1


def _submit_source(args: argparse.Namespace, settings: Settings) -> dict[str, Any]:
    """What ``submit`` asks the service to run: a text file (``--document``; ``-`` reads it from
    standard input), a task folder (``--task PATH``; ``-`` reads it packed as a tar from standard
    input; or ``TASK``, the folder ``make up`` mounts) sent as its document, question and gold
    answers, or the name of a task bundled with the service. A path is this machine's: inside
    the ``network`` container, the container's."""
    source = _document_source(args.document) if args.document else _task_source(args.task, settings)
    if getattr(args, "name", None):
        source["name"] = _name(args.name)
    return source


def _document_source(document: str) -> dict[str, Any]:
    if document == "-":
        return {"document": document_from(_stdin("--document -"))}
    path = Path(document)
    if not path.exists() or path.is_dir():  # a pipe (/dev/stdin) or a device is read like a file
        raise TaskError(f"--document {path}: no such file here (a file of another machine, or of the host "
                        f"outside a container, goes on standard input: --document - < FILE)")  # fmt: skip
    try:
        return {"document": path.read_text(encoding="utf-8"), "name": _name(path.stem)}
    except UnicodeDecodeError as exc:
        raise TaskError(f"--document {path} is not UTF-8 text ({exc.reason})") from exc


def _task_source(name: str | None, settings: Settings) -> dict[str, Any]:
    if name == "-":
        return _task_fields(task_from_tar(_stdin("--task -")))
    folder = Path(name) if name else settings.task
    if folder.is_dir():
        return _task_fields(load_task(folder, None if name else settings.task_label))
    if name and ("/" in name or name.startswith(".")):
        raise TaskError(f"--task {name}: no such task folder here (a folder of another machine, or of the "
                        f"host outside a container, goes on standard input: tar -C FOLDER -c . | ... --task -)")  # fmt: skip
    return {"task": name or folder.name}  # a bundled task's name


def _task_fields(task: Task) -> dict[str, Any]:
    return {"document": task.doc, "question": task.question, "name": _name(task.task_id),
            "answers": list(task.golds) or None}  # fmt: skip


def _stdin(flag: str) -> bytes:
    """Standard input, for ``--document -`` / ``--task -``: never a terminal."""
    if sys.stdin is None or sys.stdin.isatty():
        raise TaskError(f"{flag} reads standard input, which is a terminal here: send the file with "
                        f"'< FILE' or a pipe (through docker compose exec, with -T)")  # fmt: skip
    return read_stdin(sys.stdin.buffer, flag)


def _name(text: str) -> str | None:
    """A run name from a file or folder name (the characters a task id may have)."""
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-._")[:100]
    return cleaned or None


def add_commands(sub: Subparsers) -> None:
    """Add this module's commands to ``gaiamesh``."""
    run = sub.add_parser("run", help="run the whole mesh locally on one task")
    run.add_argument("task", help="task folder (doc.txt + ground_truth.json)")
    run.add_argument("--out", help="output folder (default runs/<task id>)")
    run.add_argument("--base-port", type=int, default=0, help="first agent port (default: free ports)")
    run.add_argument(
        "--replay-plan",
        dest="replay_plan",
        help="orchestrated: run the plan saved in this task_state.json again",
    )
    common_options(run)
    run.set_defaults(func=_cmd_run)

    base = sub.add_parser("baseline", help="one direct model call on the task, scored the same way")
    base.add_argument("task")
    base.add_argument("--out")
    common_options(base)
    base.set_defaults(func=_cmd_baseline)

    agent = sub.add_parser("agent", help="serve one agent (NODE_ID, TOOL, PORT from the environment)")
    common_options(agent)
    agent.set_defaults(func=_cmd_agent)

    relay = sub.add_parser("relay", help="run the relay once (TASK, AGENTS, OUT_DIR from the environment)")
    relay.add_argument(
        "--no-summary", action="store_true", help="skip the summary table (the caller prints it)"
    )
    common_options(relay)
    relay.set_defaults(func=_cmd_relay)

    api = sub.add_parser("serve", help="the network service: runs, sessions and live events over HTTP")
    api.add_argument("--service-host", dest="service_host", help="bind address (SERVICE_HOST, 127.0.0.1)")
    api.add_argument("--service-port", dest="service_port", type=int, help="port (SERVICE_PORT, 8080)")
    api.add_argument("--out", dest="out_dir", help="state and runs folder (OUT_DIR, results/)")
    common_options(api)
    api.set_defaults(func=_cmd_serve)

    sb = sub.add_parser("submit", help="start a run on a running network service and follow it live")
    sb.add_argument("--task", help="a task folder (doc.txt + ground_truth.json), '-' for one packed as a tar on "
                    "standard input, or a bundled task's name (default: TASK, the folder make up mounts)")  # fmt: skip
    sb.add_argument("--document", help="a text file to ask about instead of a task ('-': standard input)")
    sb.add_argument(
        "--name", help="what the run is called in its metrics (default: the folder's or file's name)"
    )
    sb.add_argument("--question", help="the question (needed with --document; replaces a task's)")
    sb.add_argument("--answer", help="the right answer, to score the run (without one it is not scored)")
    sb.add_argument("--url", help="the service (default http://SERVICE_HOST:SERVICE_PORT)")
    sb.add_argument("--out", help="also download the archive and metrics.json into this folder")
    sb.add_argument("--protocol", help="wire protocol (default: the service's PROTOCOL)")
    sb.add_argument("--transport", choices=["relay", "native"],
                    help="relay: the relay's WebSocket; native: the protocol's own wire (default: TRANSPORT)")  # fmt: skip
    sb.add_argument(
        "--strategy", choices=list(TASK_STRATEGIES), help="the team that answers (default: STRATEGY)"
    )
    sb.add_argument("--routing", help="broadcast | topic | share | auto (default: ROUTING)")
    sb.add_argument(
        "--run-timeout",
        dest="run_timeout",
        type=float,
        help="seconds the run may take (default: RUN_TIMEOUT)",
    )
    sb.add_argument("--back-within", dest="back_within", type=float,
                    help="seconds to wait for a service that went away during the run to answer again "
                    "(a restart); then exit 3 (default 120)")  # fmt: skip
    sb.set_defaults(func=_cmd_submit)

    srv = sub.add_parser("serve-model", help="serve the bundled model over the Ollama API")
    srv.add_argument("--host", default="127.0.0.1")
    srv.add_argument("--port", type=int, default=11434)
    srv.add_argument("--model", help="name to serve under (MODEL)")
    srv.set_defaults(func=_cmd_serve_model)

    web = sub.add_parser("serve-web", help="serve the offline web (pages and search) for the research worker")
    web.add_argument("--host", default="127.0.0.1")
    web.add_argument("--port", type=int, default=8090)
    web.add_argument(
        "--tasks-dir", dest="tasks_dir", default="tasks", help="task documents to publish as pages"
    )
    web.set_defaults(func=_cmd_serve_web)
