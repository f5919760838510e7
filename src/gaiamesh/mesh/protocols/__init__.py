"""Protocol adapters, chosen by name from a registry."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ...errors import ConfigError, Invalid
from ..freshness import DEFAULT_WINDOW_S
from .a2a import A2AAdapter
from .acp import AcpAdapter
from .agora import AgoraAdapter
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


def _anp(node_id: str, keys_dir: Path) -> ProtocolAdapter:
    # Imported on first use: the ANP SDK (aiohttp and more) loads only for runs that speak it.
    from .anp import AnpAdapter

    return AnpAdapter.from_dir(node_id, keys_dir)


def _mcp(node_id: str, keys_dir: Path) -> ProtocolAdapter:
    # Imported on first use, like ANP: the MCP SDK loads only in the processes that speak it.
    from .mcp import McpAdapter

    return McpAdapter()


_REGISTRY: dict[str, AdapterFactory] = {
    "json": lambda node_id, keys_dir: JsonAdapter(),
    "binary": lambda node_id, keys_dir: BinaryAdapter(),
    "compressed": lambda node_id, keys_dir: CompressedAdapter(),
    "signed": SignedAdapter.from_dir,
    "a2a": lambda node_id, keys_dir: A2AAdapter(),
    "anp": _anp,
    "acp": lambda node_id, keys_dir: AcpAdapter(),
    "agora": lambda node_id, keys_dir: AgoraAdapter(),
    "mcp": _mcp,
}

KEYED = frozenset({"signed", "anp"})
"""Protocols whose endpoints sign with the key pairs ``generate_keys`` writes."""


def register(name: str, factory: AdapterFactory) -> None:
    """Add a protocol under ``name`` (plug-ins use this)."""
    _REGISTRY[name] = factory


def available() -> list[str]:
    return sorted(_REGISTRY)


def check(name: str) -> str:
    """``name`` if a protocol is registered under it; else :class:`~gaiamesh.errors.UnknownProtocol`
    (bad configuration to a command, 422 to the service): the one check of a protocol's name."""
    if name not in _REGISTRY:
        raise UnknownProtocol(f"unknown protocol {name!r}; available: {', '.join(available())}")
    return name


def get_adapter(
    name: str, node_id: str = "network", keys_dir: Path = Path("keys"), replay_window_s: float = DEFAULT_WINDOW_S
) -> ProtocolAdapter:
    """The adapter called ``name``, set up for the endpoint ``node_id``; one that signs the time
    and a nonce refuses a frame older than ``replay_window_s`` or seen before (0: it does not)."""
    return _REGISTRY[check(name)](node_id, keys_dir).with_replay_window(replay_window_s)


__all__ = [
    "KEYED",
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
