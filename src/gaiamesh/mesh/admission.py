"""Who belongs to a run: both ends of a relay's connection prove that they hold the run's mesh
token (``GAIAMESH_MESH_TOKEN``), so that a relay never measures agents another stack or bench
started on the same ports, and an agent never works for another run's relay.

Pure functions; the relay and the agent put their results in the WebSocket handshake:

- the relay's request carries a fresh challenge (the time it was made and a random part) and its
  own proof of the token over it;
- the agent refuses the upgrade (403) when the relay's proof does not match its own token, or the
  challenge is stale or one it has answered before (a captured request sent again: see
  ``freshness.py``), and otherwise answers with its proof over the same challenge, its node id,
  its tool and the protocol it chose (a proof made under one protocol admits no other);
- the relay refuses an agent whose answer carries no proof or a wrong one.

The token itself never crosses the wire, and an agent's proof holds only for the challenge it
answers. An empty token on both ends checks nothing (unit tests of one layer); every command
that starts agents hands them one (local mode: a new one per command; compose: ``.env``).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Mapping

from .freshness import Freshness

HEADER_CHALLENGE = "X-Gaiamesh-Challenge"
HEADER_RELAY_PROOF = "X-Gaiamesh-Relay-Proof"
HEADER_AGENT_PROOF = "X-Gaiamesh-Proof"
# The run a relay's native hello admits the agent for (the WebSocket needs none: its connection
# is the relay's), so that the agent tells the relay's runs from calls from outside it.
HEADER_RUN = "X-Gaiamesh-Run"


def new_token() -> str:
    """A fresh mesh token (what a command hands the agents it starts)."""
    return secrets.token_urlsafe(24)


def challenge() -> str:
    """``<ms since the epoch>.<random hex>``: the relay's proof covers both parts."""
    return f"{time.time_ns() // 1_000_000}.{secrets.token_hex(16)}"


def _mac(token: str, *parts: str) -> str:
    return hmac.new(token.encode(), "\n".join(parts).encode(), hashlib.sha256).hexdigest()


def relay_proof(token: str, challenge: str) -> str:
    return _mac(token, "relay", challenge)


def agent_proof(token: str, challenge: str, node_id: str, tool: str, speaks: str) -> str:
    """An agent's proof over the relay's challenge, who it is, and what it agreed to speak
    (``speaks``: the WebSocket subprotocol it chose, or the native wire's hello path), so that
    a proof made for one protocol does not admit a connection under another."""
    return _mac(token, "agent", challenge, node_id, tool, speaks)


def relay_headers(token: str) -> dict[str, str]:
    """The headers of a relay's connection request (none without a token)."""
    if not token:
        return {}
    c = challenge()
    return {HEADER_CHALLENGE: c, HEADER_RELAY_PROOF: relay_proof(token, c)}


def relay_refusal(token: str, headers: Mapping[str, str], fresh: Freshness | None = None) -> str | None:
    """Why a connection request with ``headers`` is refused (None: it comes from a relay holding
    ``token``, and, with ``fresh``, its challenge is fresh and answered for the first time)."""
    if not token:
        return None
    c, proof = headers.get(HEADER_CHALLENGE), headers.get(HEADER_RELAY_PROOF)
    if not (c and proof and hmac.compare_digest(str(proof), relay_proof(token, str(c)))):
        return "this agent belongs to another mesh (GAIAMESH_MESH_TOKEN)"
    if fresh is None:
        return None
    made, _, nonce = str(c).partition(".")
    if not (made.isdigit() and nonce):
        return "the relay's challenge names no time (an older relay?)"
    why = fresh.refusal("relay", nonce.encode(), int(made) / 1000)
    return None if why is None else f"the relay's challenge was refused: {why}"


def agent_admitted(token: str, challenge: str, proof: str | None, node_id: str, tool: str, speaks: str) -> bool:
    """Whether an agent's handshake answer proves it holds ``token`` (as ``node_id``/``tool``,
    speaking what the relay asked for: ``speaks``)."""
    if not token:
        return True
    return proof is not None and hmac.compare_digest(proof, agent_proof(token, challenge, node_id, tool, speaks))
