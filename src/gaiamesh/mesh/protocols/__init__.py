"""Every protocol, named once in one table: its envelope on the relay's WebSocket, whether it
signs with keys, its own wire (``TRANSPORT=native``) and whether that wire streams.

A protocol with an SDK of its own is a folder here (``a2a/``, ``acp/``, ``agora/``, ``anp/``,
``mcp/``: its ``envelope.py``, its ``binding.py`` and their helpers); the others are a module of
their envelope each and share the plain HTTP binding (``plain.py``). A new protocol is one
folder and one line of :data:`PROTOCOLS`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ...errors import ConfigError, Invalid
from ..freshness import DEFAULT_WINDOW_S
from .a2a.envelope import A2AAdapter
from .acp.envelope import AcpAdapter
from .agora.envelope import AgoraAdapter
from .base import ProtocolAdapter, ProtocolError, canonical_json
from .binary import BinaryAdapter
from .compressed import CompressedAdapter
from .json_adapter import JsonAdapter
from .signed import SignedAdapter, generate_keys


class UnknownProtocol(ConfigError, Invalid):
    """A protocol's name that no adapter is registered under: bad configuration to a command
    (exit code 2), an invalid request (422) to the service."""


AdapterFactory = Callable[[str, Path], ProtocolAdapter]
"""Builds an adapter for endpoint ``node_id``; keyed protocols load keys from ``keys_dir``."""


@dataclass(frozen=True)
class Protocol:
    """One line of the table."""

    envelope: AdapterFactory  # its frame on the relay's WebSocket
    # The module (under this package) whose ``binding(name)`` is its own wire, imported when a
    # run first needs it, so that an SDK loads only in the processes that speak it; "": none.
    native: str = ""
    keyed: bool = False  # its endpoints sign with the key pairs generate_keys writes
    # Its own wire carries an agent's frames while it works (a streaming method): the
    # orchestrated strategy's sub-tasks leave before the orchestrator's answer does.
    streams: bool = False


def _anp(node_id: str, keys_dir: Path) -> ProtocolAdapter:
    # Imported on first use: the ANP SDK (aiohttp and more) loads only for runs that speak it.
    from .anp.envelope import AnpAdapter

    return AnpAdapter.from_dir(node_id, keys_dir)


def _mcp(node_id: str, keys_dir: Path) -> ProtocolAdapter:
    # Imported on first use, like ANP: the MCP SDK loads only in the processes that speak it.
    from .mcp.envelope import McpAdapter

    return McpAdapter()


PROTOCOLS: dict[str, Protocol] = {
    "json": Protocol(lambda node_id, keys_dir: JsonAdapter(), "plain", streams=True),
    "binary": Protocol(lambda node_id, keys_dir: BinaryAdapter(), "plain", streams=True),
    "compressed": Protocol(lambda node_id, keys_dir: CompressedAdapter(), "plain", streams=True),
    "signed": Protocol(SignedAdapter.from_dir, "plain", keyed=True, streams=True),
    "a2a": Protocol(lambda node_id, keys_dir: A2AAdapter(), "a2a.binding", streams=True),
    "anp": Protocol(_anp, "anp.binding", keyed=True),
    "acp": Protocol(lambda node_id, keys_dir: AcpAdapter(), "acp.binding", streams=True),
    "agora": Protocol(lambda node_id, keys_dir: AgoraAdapter(), "agora.binding"),
    "mcp": Protocol(_mcp, "mcp.binding", streams=True),
}

KEYED = frozenset(name for name, protocol in PROTOCOLS.items() if protocol.keyed)
"""Protocols whose endpoints sign with the key pairs ``generate_keys`` writes."""


def register(name: str, factory: AdapterFactory) -> None:
    """Add a protocol's envelope under ``name`` (plug-ins use this); a new one has no native wire."""
    PROTOCOLS[name] = replace(PROTOCOLS[name], envelope=factory) if name in PROTOCOLS else Protocol(factory)


def available() -> list[str]:
    return sorted(PROTOCOLS)


def check(name: str) -> str:
    """``name`` if a protocol is registered under it; else :class:`~gaiamesh.errors.UnknownProtocol`
    (bad configuration to a command, 422 to the service): the one check of a protocol's name."""
    if name not in PROTOCOLS:
        raise UnknownProtocol(f"unknown protocol {name!r}; available: {', '.join(available())}")
    return name


def get_adapter(
    name: str, node_id: str = "network", keys_dir: Path = Path("keys"), replay_window_s: float = DEFAULT_WINDOW_S
) -> ProtocolAdapter:
    """The adapter called ``name``, set up for the endpoint ``node_id``; one that signs the time
    and a nonce refuses a frame older than ``replay_window_s`` or seen before (0: it does not)."""
    return PROTOCOLS[check(name)].envelope(node_id, keys_dir).with_replay_window(replay_window_s)


__all__ = [
    "KEYED",
    "PROTOCOLS",
    "Protocol",
    "ProtocolAdapter",
    "ProtocolError",
    "available",
    "canonical_json",
    "check",
    "generate_keys",
    "get_adapter",
    "UnknownProtocol",
    "register",
]
