"""Gathering a run's agent workspaces for its archive: read where they lie on this host, or
fetched from agents that run elsewhere (a swarm's other nodes). The rules are in
``workspaces.py``; this module only moves the bytes."""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from pathlib import Path

import httpx
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ..errors import GaiameshError
from ..settings import AgentSpec, Settings
from . import workspaces
from .connect import relay_tls
from .protocols.signed import SigningKeyError, load_keys
from .records import AgentMetrics

log = logging.getLogger("gaiamesh.mesh.collect")

# A lost node's address may not answer at all: the run's results wait this long for it, no more.
FETCH_TIMEOUT = httpx.Timeout(10.0, connect=3.0)


def relay_key(keys_dir: Path) -> Ed25519PrivateKey | None:
    """The relay's signing key, or None where no keys were made (then only local workspaces)."""
    try:
        return load_keys("workspace", workspaces.SIGNER, keys_dir)[0]
    except SigningKeyError:
        return None


async def of_run(
    settings: Settings, specs: list[AgentSpec], agents: dict[str, AgentMetrics], run_id: str, staging: Path,
    gone: set[str],
) -> tuple[dict[str, Path], dict[str, str]]:
    """Gather the workspaces of a relay's run at its end (``agents``: what the relay counted of
    each; ``gone``: replicas let go, not asked)."""
    sent = {node for node, agent in agents.items() if agent.pkts_sent > 0}
    # Only an agent this relay admitted can hold a workspace of this run: what it never
    # reached, or refused (a process at an agent's address that proved nothing), is not asked.
    admitted = [s for s in specs if s.node_id in agents and agents[s.node_id].status != "registered"]
    return await gather(admitted, Path(settings.workspace_root), run_id, staging, relay_key(settings.keys_dir),
                        gone, sent, relay_tls(settings))  # fmt: skip


async def gather(
    specs: list[AgentSpec], root: Path, run_id: str, staging: Path, key: Ed25519PrivateKey | None,
    gone: set[str], sent: set[str], tls: ssl.SSLContext | None = None,
) -> tuple[dict[str, Path], dict[str, str]]:  # fmt: skip
    """Each agent's folder of run ``run_id``: under ``root`` where this host has it, else fetched
    into ``staging/<node_id>``. Returns (node id -> folder, node id -> why it is missing).

    The agents in ``gone`` left the run and are not asked. Only the agents in ``sent`` (those
    that sent a frame, and so saved a workspace first) can be missing: another may have kept
    nothing for this run (a replica handed no work). ``tls``: the relay's context under WIRE_TLS
    (the agents' port speaks only TLS then)."""
    found: dict[str, Path] = {}
    missing: dict[str, str] = {}
    remote = []
    for spec in specs:
        local = root / spec.node_id / run_id
        if local.is_dir():
            found[spec.node_id] = local
        elif spec.node_id in gone:
            missing[spec.node_id] = "it left the run, and its workspace with it"
        elif key is None:
            missing[spec.node_id] = "not on this host, and the relay has no key to ask for it"
        else:
            remote.append(spec)
    if remote and key is not None:
        async with httpx.AsyncClient(timeout=FETCH_TIMEOUT, verify=tls if tls is not None else True) as client:
            # Every fetch is awaited here; one that fails in a way _fetch did not foresee costs
            # that agent's workspace, never the run's metrics (hence return_exceptions).
            results = await asyncio.gather(
                *(_fetch(client, s, run_id, staging / s.node_id, key, "http" if tls is None else "https") for s in remote), return_exceptions=True
            )
        for spec, why in zip(remote, results, strict=True):
            if why is None:
                if (staging / spec.node_id).is_dir():
                    found[spec.node_id] = staging / spec.node_id
                continue
            missing[spec.node_id] = why if isinstance(why, str) else f"{type(why).__name__}: {why}"
            log.warning("run %s: agent %s's workspace is not archived: %s", run_id, spec.node_id, missing[spec.node_id])
    return found, {node: why for node, why in missing.items() if node in sent}


async def _fetch(
    client: httpx.AsyncClient, spec: AgentSpec, run_id: str, dest: Path, key: Ed25519PrivateKey, scheme: str
) -> str | None:
    """Fetch one agent's workspace into ``dest``; None when done (or when the agent kept nothing
    for this run), else why not."""
    url = f"{scheme}://{spec.host}:{spec.port}/runs/{run_id}/workspace"
    auth = workspaces.sign(key, spec.announces, run_id, time.time())
    try:
        response = await client.get(url, headers={"Authorization": auth})
    except httpx.HTTPError as exc:
        return f"unreachable at {spec.host}:{spec.port} ({type(exc).__name__})"
    if response.status_code == 404:
        return None  # the agent kept nothing for this run (a replica that was handed no work)
    if response.status_code == 426:
        # A plain WebSocket server (a bench's stand-in, not our agent) asks for an upgrade; its
        # library's words about browsers would say nothing here.
        return f"what answers at {spec.host}:{spec.port} serves only WebSocket there: it is not a Gaia Mesh agent"
    if response.status_code != 200:
        return f"the agent answered {response.status_code}: {response.text.strip()[:200]}"
    try:
        await asyncio.to_thread(workspaces.unpack, response.content, dest)
    except GaiameshError as exc:
        return str(exc)
    return None
