"""``run_artifacts.tar.gz``: every agent workspace, the frame log, metrics and resolved config."""

from __future__ import annotations

import tarfile
from pathlib import Path


def write_archive(target: Path, workspaces: dict[str, Path], files: list[Path]) -> Path:
    """Archive ``workspaces/<node_id>/...`` and the run files at the archive root.

    Symlinks are stored as links, never followed, so nothing outside a workspace gets in.
    """
    tmp = target.with_suffix(".tmp")
    with tarfile.open(tmp, "w:gz") as tar:
        for node_id, folder in sorted(workspaces.items()):
            if folder.is_dir():
                tar.add(folder, arcname=f"workspaces/{node_id}", recursive=True)
        for f in files:
            if f.is_file():
                tar.add(f, arcname=f.name)
    tmp.replace(target)
    return target
