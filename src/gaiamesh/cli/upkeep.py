"""Commands that look after a project's files: task imports, the audit of a run, signing keys."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.table import Table

from .common import Subparsers, console, errors, settings_from


def _cmd_tasks_import(args: argparse.Namespace) -> int:
    from ..tasks.importers import import_tasks

    report = import_tasks(args.format, Path(args.file), Path(args.out_dir), args.limit)
    console.print(f"wrote {len(report.written)} task folders under {args.out_dir}")
    for why, n in sorted(report.skipped.items()):
        console.print(f"skipped {n}: {why}")
    return 0 if report.written else 1


def _cmd_tasks_list(args: argparse.Namespace) -> int:
    from ..tasks.sets import census, read_entries, split_ref

    table = Table(title="task sets")
    for col in ("file", "set", "tasks", "written", "origin"):
        table.add_column(col)
    for ref in args.files:
        path, only = split_ref(ref)
        entries = read_entries(path, only)
        for name, count in census(entries).items():
            mine = [e for e in entries if e.set == name]
            days = sorted({e.written.isoformat() for e in mine})
            when = days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"
            table.add_row(path.name, name, str(count), when, mine[0].origin)
    console.print(table)
    return 0


def _cmd_tasks_export(args: argparse.Namespace) -> int:
    from ..tasks.sets import export, read_entries, split_ref

    path, only = split_ref(args.file)
    folders = export(read_entries(path, only), Path(args.out_dir))
    console.print(f"wrote {len(folders)} task folders under {args.out_dir} (one folder per set)")
    return 0


def _cmd_audit(args: argparse.Namespace) -> int:
    from ..evaluation.audit import audit

    run_dir = Path(args.run_dir)
    if not (run_dir / "metrics.json").is_file() or not (run_dir / "frames.jsonl").is_file():
        errors.print(f"[red]audit:[/red] {run_dir} needs metrics.json and frames.jsonl")
        return 2
    rows = audit(run_dir)
    table = Table(title=f"audit · {run_dir}")
    for col in ("counter", "metrics.json", "frames.jsonl", ""):
        table.add_column(col)
    for name, reported, recomputed in rows:
        table.add_row(name, str(reported), str(recomputed), "ok" if reported == recomputed else "MISMATCH")
    console.print(table)
    bad = [name for name, reported, recomputed in rows if reported != recomputed]
    if bad:
        errors.print(f"[red]audit: {', '.join(bad)} disagree with the frame log[/red]")
        return 1
    return 0


# What generate_keys issues beside the keys for anp's DID host on its own wire (mesh/localtls.py);
# and tls-<node>.pem, each node's certificate for the relay's wire (WIRE_TLS).
TLS_FILES = ("local-ca.pem", "local-tls.pem", "local-tls-key.pem", "local-trust.pem")


def _cmd_keygen(args: argparse.Namespace) -> int:
    from ..agents.teams import agent_specs
    from ..mesh.protocols import generate_keys

    settings = settings_from(args)
    nodes = args.nodes.split(",") if args.nodes else ["network", *(a.node_id for a in agent_specs(settings))]
    keys_dir = Path(args.keys_dir or settings.keys_dir)
    for node in nodes:
        stale = keys_dir / f"{node}.pem"
        if stale.is_dir() and not any(stale.iterdir()):
            stale.rmdir()  # left by a bind mount of a key that did not exist yet
    for name in ("public.json", *TLS_FILES):
        if (keys_dir / name).is_dir() and not any((keys_dir / name).iterdir()):
            (keys_dir / name).rmdir()  # left by a bind mount of a file that did not exist yet
    if (
        not args.force
        and (keys_dir / "public.json").is_file()
        and all((keys_dir / f"{n}.pem").is_file() for n in nodes)
    ):
        from ..mesh.localtls import issue_tls, node_cert_file

        wire = [node_cert_file(keys_dir, n) for n in nodes]
        if not all((keys_dir / name).is_file() for name in TLS_FILES) or not all(w.is_file() for w in wire):
            # keys made before the local CA, or before the wire's certificates: all of them anew,
            # since the CA's key was never kept (one CA signs them all)
            for w in wire:
                if w.is_dir() and not any(w.iterdir()):
                    w.rmdir()  # left by a bind mount of a file that did not exist yet
            issue_tls(keys_dir, ["localhost", "network"], nodes=nodes)
            console.print(f"keys: added the local CA and the wire's certificates to {keys_dir}")
        console.print(f"keys: {keys_dir} already holds keys for {', '.join(nodes)}")
        return 0
    generate_keys(keys_dir, nodes)
    console.print(f"keys: wrote Ed25519 key pairs for {', '.join(nodes)} to {keys_dir}")
    return 0


def add_commands(sub: Subparsers) -> None:
    """Add this module's commands to ``gaiamesh``."""
    tasks = sub.add_parser("tasks", help="task sets and folders: list, export, import public datasets")
    tasks_sub = tasks.add_subparsers(dest="tasks_command", required=True)
    imp = tasks_sub.add_parser("import", help="turn a SQuAD, HotpotQA, GAIA or JSONL file into task folders")
    imp.add_argument("--format", required=True, choices=["squad", "hotpotqa", "gaia", "jsonl"])
    imp.add_argument("--limit", type=int, default=0, help="write at most N tasks")
    imp.add_argument("file", help="the dataset file (GAIA: metadata.jsonl, attachments beside it)")
    imp.add_argument("out_dir", help="where the task folders go")
    imp.set_defaults(func=_cmd_tasks_import)
    show = tasks_sub.add_parser("list", help="the sets of task-set files: tasks, when written, by whom")
    show.add_argument("files", nargs="+", help="task-set files (FILE.jsonl, or FILE.jsonl#SET)")
    show.set_defaults(func=_cmd_tasks_list)
    exp = tasks_sub.add_parser("export", help="write a task-set file's tasks as folders (OUT_DIR/SET/ID)")
    exp.add_argument("file", help="a task-set file (FILE.jsonl, or FILE.jsonl#SET)")
    exp.add_argument("out_dir", help="where the task folders go")
    exp.set_defaults(func=_cmd_tasks_export)

    aud = sub.add_parser("audit", help="recompute a run's counters from frames.jsonl and compare")
    aud.add_argument("run_dir", help="folder with metrics.json and frames.jsonl (e.g. results/)")
    aud.set_defaults(func=_cmd_audit)

    keygen = sub.add_parser("keygen", help="create Ed25519 key pairs for the signed and anp protocols")
    keygen.add_argument("--keys-dir", help="output folder (KEYS_DIR, default keys/)")
    keygen.add_argument("--nodes", help="comma-separated node ids (default: network + the AGENTS ids)")
    keygen.add_argument("--force", action="store_true", help="replace existing keys")
    keygen.set_defaults(func=_cmd_keygen)
