"""The files on this machine that a stack's deploy reads (``docker stack deploy`` reads them here
and hands them to swarm): the signing keys the stack mounts, its file secrets, and the
fingerprints of every file compose binds into a service."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ConfigError


def write_secrets(folder: Path, values: Mapping[str, str]) -> None:
    """The file-based secrets' values, readable by their owner only (docker stack deploy reads
    them on this machine and hands them to swarm; they never enter the stack file)."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    for name, value in values.items():
        fd = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(value)


def fingerprints(config: Mapping[str, Any]) -> dict[str, str]:
    """The sha256 of every file compose binds into a service (the signing keys among them)."""
    found: dict[str, str] = {}
    for service in (config.get("services") or {}).values():
        for vol in service.get("volumes") or []:
            source = vol.get("source") if vol.get("type") == "bind" else None
            if source and source not in found and Path(source).is_file():
                found[source] = hashlib.sha256(Path(source).read_bytes()).hexdigest()
    return found


def ensure_keys(config: Mapping[str, Any]) -> str:
    """The key files the stack mounts (swarm secrets and a config read by `docker stack deploy`
    on this machine): generated where any is missing, as `gaiamesh keygen` does."""
    from ..mesh.protocols import generate_keys

    sources = {Path(v["source"]) for svc in (config.get("services") or {}).values()
               for v in svc.get("volumes") or [] if v.get("type") == "bind" and v["target"].startswith("/keys/")}  # fmt: skip
    if all(p.is_file() for p in sources):
        return ""
    nodes = sorted(p.stem for p in sources if p.suffix == ".pem")
    folders = {p.parent for p in sources}
    if len(folders) != 1:
        raise ConfigError(f"the stack's keys are in several folders: {sorted(map(str, folders))}")
    generate_keys(folders.pop(), nodes)
    return f"; wrote key pairs for {', '.join(nodes)}"
