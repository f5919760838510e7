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

AGENT_POOL = 16  # connections to one agent at most (pool_size)
AGENT_POOL_LEAST = 8  # and at least: frames held open while an agent works leave room for others
CONNECT_S = 10.0  # opening a connection, or a write


def keep_alive_s(settings: Settings) -> float:
    """How long an idle connection stays open, on both ends: the whole run (``RUN_TIMEOUT``), so
    that no gap within a run closes one."""
    return float(settings.run_timeout)


def server_keep_alive(settings: Settings) -> int:
    """uvicorn's ``timeout_keep_alive`` (whole seconds) for an agent's native server."""
    return math.ceil(keep_alive_s(settings))


def pool_size(peers: int) -> int:
    """Connections the relay's client of one agent may hold open: two for each other agent (a
    frame held open while the agent works, and one more: a coordinator takes every worker's
    result together), at least :data:`AGENT_POOL_LEAST` and at most :data:`AGENT_POOL`; a frame beyond waits for one in the relay, where it would wait in the
    agent's one process anyway. httpcore looks at every connection of a pool, twice over, for
    each request placed and each answer closed: 65 connections to a stream's coordinator spent
    71 % of the relay's CPU there (1,000 items through 64 workers on json's own wire). A cap,
    not an allocation: a connection is opened when one is needed."""
    return max(AGENT_POOL_LEAST, min(AGENT_POOL, 2 * peers))


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
    so a read may take as long as the run; and so may the wait for a connection."""
    # a frame may wait for a free connection as long as for its answer (both: the agent is busy)
    waits = httpx.Timeout(CONNECT_S, read=settings.run_timeout, pool=settings.run_timeout)
    return httpx.AsyncClient(timeout=waits, limits=limits(settings, peers), verify=_tls())
