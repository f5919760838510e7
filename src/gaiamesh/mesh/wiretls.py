"""TLS on the relay's wire (``WIRE_TLS``): ``off``, ``tls`` (each agent proves who it is to the
relay) or ``mtls`` (the relay proves who it is to each agent as well).

Both ends trust only the local CA of ``make keys`` (``localtls.py``), never a public root, and
each end is known by the node id its certificate names, not by a host name (the same agent is
127.0.0.1 locally, agent-search under compose, a DNS entry on a swarm). Under ``mtls`` an agent
still completes a TLS handshake with a client that shows no certificate (CERT_OPTIONAL), so that
a container's health check can ask ``/health``; everything else it refuses to such a client
(``refusal``), and a certificate that does not verify ends the handshake.

Pure: contexts and identities; the relay (``connect.py``, ``collect.py``) and the agent use them.
"""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any, Literal

from ..errors import ConfigError
from .localtls import NODE_URI, node_cert_file

WireTls = Literal["off", "tls", "mtls"]
RELAY_NODE = "network"  # the relay's node id in ``make keys`` (its signing key is network.pem too)
CA_FILE = "local-ca.pem"


def _files(keys_dir: Path, node_id: str) -> tuple[Path, Path]:
    ca, mine = keys_dir / CA_FILE, node_cert_file(keys_dir, node_id)
    for path in (ca, mine):
        if not path.is_file():
            raise ConfigError(f"WIRE_TLS needs {path} (make keys writes it, or gaiamesh keygen --keys-dir {keys_dir})")
    return ca, mine


def agent_context(mode: WireTls, keys_dir: Path, node_id: str) -> ssl.SSLContext | None:
    """The TLS server context of agent ``node_id`` (None: plain TCP)."""
    if mode == "off":
        return None
    ca, mine = _files(keys_dir, node_id)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.num_tickets = 0  # the relay never resumes a session: two unused tickets were ~500 B a connection
    ctx.load_cert_chain(mine)
    if mode == "mtls":
        ctx.load_verify_locations(cafile=ca)
        ctx.verify_mode = ssl.CERT_OPTIONAL  # a health check shows none; refusal() turns it away
    return ctx


def relay_context(mode: WireTls, keys_dir: Path) -> ssl.SSLContext | None:
    """The relay's TLS client context (None: plain TCP): it trusts the local CA only."""
    if mode == "off":
        return None
    ca, mine = _files(keys_dir, RELAY_NODE)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.check_hostname = False  # the node id is checked instead (node_of), after the handshake
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.load_verify_locations(cafile=ca)
    if mode == "mtls":
        ctx.load_cert_chain(mine)
    return ctx


def node_of(peercert: dict[str, Any] | None) -> str | None:
    """The node id a verified peer certificate names (``getpeercert()``'s dict), or None."""
    if not peercert:
        return None
    for kind, value in peercert.get("subjectAltName", ()):
        if kind == "URI" and isinstance(value, str) and value.startswith(NODE_URI):
            return value[len(NODE_URI):]
    return None


def peer_node(transport: Any) -> str | None:
    """The node id of the verified peer on an asyncio ``transport`` (None: none, or plain TCP)."""
    ssl_object = transport.get_extra_info("ssl_object") if transport is not None else None
    return node_of(ssl_object.getpeercert()) if ssl_object is not None else None


def refusal(mode: WireTls, peer: str | None) -> str | None:
    """Why an agent refuses a request that is not a health check (None: it serves it)."""
    if mode != "mtls":
        return None
    if peer is None:
        return "mutual TLS: the client showed no certificate of this mesh's CA"
    if peer != RELAY_NODE:
        return f"mutual TLS: the client's certificate names node {peer!r}, not the relay"
    return None


def scheme(mode: WireTls, secure: str, plain: str) -> str:
    """``secure`` (wss, https) under TLS, else ``plain`` (ws, http)."""
    return plain if mode == "off" else secure
