"""A bench's child process, stopped: asked to end, then killed if it has not within a grace."""

from __future__ import annotations

import asyncio
from pathlib import Path

from ..errors import RunError

GRACE_S = 10.0


async def stop(proc: asyncio.subprocess.Process, grace_s: float = GRACE_S) -> None:
    """Terminate ``proc`` if it still runs, and kill it if it has not ended after ``grace_s``."""
    if proc.returncode is not None:
        return
    proc.terminate()
    try:
        await asyncio.wait_for(proc.wait(), grace_s)
    except TimeoutError:
        proc.kill()
        await proc.wait()


async def ready(proc: asyncio.subprocess.Process, log: Path, what: str, timeout_s: float) -> None:
    """Wait for the ``ready`` line ``proc`` prints on standard output once it serves; if it does
    not come within ``timeout_s``, a RunError naming ``what`` with the end of its ``log``."""
    assert proc.stdout is not None
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), timeout_s)
    except TimeoutError:
        line = b""
    if line.strip() != b"ready":
        raise RunError(f"the bench's {what} did not start: {log.read_text(errors='replace')[-2000:]}")
