"""Protocol adapters, chosen by name from a registry."""

from __future__ import annotations

from collections.abc import Callable

from .base import ProtocolAdapter, ProtocolError, canonical_json
from .json_adapter import JsonAdapter

AdapterFactory = Callable[[str, str], ProtocolAdapter]
"""Builds an adapter for ``(node_id, mesh_secret)``; keyed protocols need both."""

_REGISTRY: dict[str, AdapterFactory] = {
    "json": lambda node_id, secret: JsonAdapter(),
}


def register(name: str, factory: AdapterFactory) -> None:
    """Add a protocol under ``name`` (later adapters and plug-ins use this)."""
    _REGISTRY[name] = factory


def available() -> list[str]:
    return sorted(_REGISTRY)


def get_adapter(name: str, node_id: str = "network", secret: str = "") -> ProtocolAdapter:
    """The adapter called ``name``, set up for the endpoint ``node_id``."""
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown protocol {name!r}; available: {', '.join(available())}") from None
    return factory(node_id, secret)


__all__ = ["ProtocolAdapter", "ProtocolError", "canonical_json", "get_adapter", "available", "register"]
