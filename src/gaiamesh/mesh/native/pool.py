"""How the native wire keeps its connections: one place for the relay's client and the agents'
servers, recorded in ``metrics.json`` (``layers.keep_alive_s``, ``layers.pool_connections``).

httpx's pool and uvicorn's server each close a connection idle for 5 s by default, while the
model's time between two frames to one agent is 10 to 60 s in a live run: every frame after a
pause then opened a new connection, a cost of our harness that passed for the protocol's.
"""

from __future__ import annotations

import math

import httpx

from ...settings import Settings

DEFAULT_POOL = 100  # httpx's own default cap: a small team keeps at least that


def keep_alive_s(settings: Settings) -> float:
    """How long an idle connection stays open, on both ends: the whole run (``RUN_TIMEOUT``), so
    that no gap within a run closes one."""
    return float(settings.run_timeout)


def server_keep_alive(settings: Settings) -> int:
    """uvicorn's ``timeout_keep_alive`` (whole seconds) for an agent's native server."""
    return math.ceil(keep_alive_s(settings))


def pool_size(peers: int) -> int:
    """Connections the relay's client may hold open: four per agent (a frame's request, its
    streamed answer, a sub-task's result and a retry in flight at once), never fewer than httpx's
    default."""
    return max(DEFAULT_POOL, 4 * peers)


def limits(settings: Settings, peers: int) -> httpx.Limits:
    """The relay's client's pool for a team of ``peers`` agents: every connection it opens may
    stay open for the run."""
    size = pool_size(peers)
    return httpx.Limits(max_connections=size, max_keepalive_connections=size, keepalive_expiry=keep_alive_s(settings))
