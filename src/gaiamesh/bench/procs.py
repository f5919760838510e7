"""A bench's child process, stopped: asked to end, then killed if it has not within a grace."""

from __future__ import annotations

import asyncio

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
