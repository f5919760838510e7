"""How the native wire keeps its connections: one place for the relay's clients and the agents'
servers, recorded in ``metrics.json`` (``layers.keep_alive_s``, ``layers.pool_connections``).

httpx's pool and uvicorn's server each close a connection idle for 5 s by default, while the
model's time between two frames to one agent is 10 to 60 s in a live run: every frame after a
pause then opened a new connection, a cost of our harness that passed for the protocol's.

The relay holds one pool per agent, not one for the team: httpcore looks at every connection of
a pool for every request it places and every response it closes, so one pool of 260
connections for 65 agents spent 84 % of the relay's CPU there (a stream of 200 items through
64 workers, 2026-12-05); an agent's own pool holds the few connections that agent uses.
"""

from __future__ import annotations

import math
import ssl
from functools import cache

import httpx

from ...settings import Settings

DEFAULT_POOL = 100  # httpx's own default cap: a small team keeps at least that
CONNECT_S = 10.0  # opening a connection (or a write, or waiting for one from the pool)


def keep_alive_s(settings: Settings) -> float:
    """How long an idle connection stays open, on both ends: the whole run (``RUN_TIMEOUT``), so
    that no gap within a run closes one."""
    return float(settings.run_timeout)


def server_keep_alive(settings: Settings) -> int:
    """uvicorn's ``timeout_keep_alive`` (whole seconds) for an agent's native server."""
    return math.ceil(keep_alive_s(settings))


def pool_size(peers: int) -> int:
    """Connections the relay's client of one agent may hold open: every other agent's frame to
    it in flight at once (a coordinator takes every worker's result together), four each (a
    frame's request, its streamed answer, a sub-task's result and a retry), never fewer than
    httpx's default. A cap, not an allocation: a connection is opened when one is needed."""
    return max(DEFAULT_POOL, 4 * peers)


def limits(settings: Settings, peers: int) -> httpx.Limits:
    """One agent's pool, in a team of ``peers`` agents: every connection it opens may stay open
    for the run."""
    size = pool_size(peers)
    return httpx.Limits(max_connections=size, max_keepalive_connections=size, keepalive_expiry=keep_alive_s(settings))


@cache
def _tls() -> ssl.SSLContext:
    """httpx's default TLS context, made once: each client would load the CA bundle again (15 ms
    of CPU, 37 % of the relay's start-up with a client per agent), though the wire is plain HTTP."""
    return httpx.create_ssl_context()


def client(settings: Settings, peers: int) -> httpx.AsyncClient:
    """The relay's HTTP client of one agent. A frame's answer comes when the agent's tool is done,
    so a read may take as long as the run."""
    return httpx.AsyncClient(timeout=httpx.Timeout(CONNECT_S, read=settings.run_timeout), limits=limits(settings, peers),
                             verify=_tls())  # fmt: skip
