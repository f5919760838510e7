"""``run_artifacts.tar.gz``: every agent workspace, the frame log, metrics and resolved config."""

from __future__ import annotations

import io
import tarfile
import time
from collections.abc import Mapping
from pathlib import Path


def write_archive(
    target: Path, workspaces: Mapping[str, Path], files: list[Path], pinned: Mapping[str, bytes | None] | None = None
) -> Path:
    """Archive ``workspaces/<node_id>/...`` and the run files at the archive root.

    ``pinned``: files stored as these bytes (by their name in the archive; None: left out) rather
    than as they are on disk now: what the metrics were computed from, although an agent still at
    work may have written the file since. Symlinks are stored as links, never followed, so nothing outside a
    workspace gets in.
    """
    pinned = dict(pinned or {})
    tmp = target.with_suffix(".tmp")
    with tarfile.open(tmp, "w:gz") as tar:
        for node_id, folder in sorted(workspaces.items()):
            if folder.is_dir():
                tar.add(folder, arcname=f"workspaces/{node_id}", recursive=True,
                        filter=lambda info: None if info.name in pinned or info.name.endswith(".tmp") else info)  # fmt: skip
        for name, data in sorted(pinned.items()):
            if data is None:
                continue
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
            tar.addfile(info, io.BytesIO(data))
        for f in files:
            if f.is_file():
                tar.add(f, arcname=f.name)
    tmp.replace(target)
    return target
