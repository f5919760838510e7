"""Each protocol on its own wire (``TRANSPORT=native``): which protocols have one, whether a
strategy's runs can use it, and the binding that makes it, from the protocols' one table
(``mesh/protocols/``).

A binding's module is imported when a run first needs it, so that an SDK loads only in the
processes that speak its protocol natively."""

from __future__ import annotations

import importlib

from ...errors import ConfigError, Invalid
from .. import protocols
from ..protocols import PROTOCOLS
from ..protocols.native import AgentEndpoint, Binding, NativeClient, Peer, Undelivered

TRANSPORTS = ("relay", "native")


class NoNativeWire(ConfigError, Invalid):
    """A protocol with no native binding asked for with ``TRANSPORT=native``."""


# The strategies whose lead agent hands out sub-tasks while it works on its doc_init (the
# orchestrator, a stream's coordinator): their frames must leave before its request is answered.
SUBTASKING = frozenset({"orchestrated", "stream"})


def native_protocols() -> list[str]:
    return sorted(name for name, protocol in PROTOCOLS.items() if protocol.native)


def streaming() -> list[str]:
    """The protocols whose native wire carries an agent's frames while it works."""
    return sorted(name for name, protocol in PROTOCOLS.items() if protocol.native and protocol.streams)


def check(protocol: str, strategy: str = "pipeline") -> str:
    """``protocol`` if it has a native wire that can carry ``strategy``'s runs; else
    :class:`NoNativeWire` (checked by name, so the caller need not load the protocol's SDK)."""
    if protocol not in native_protocols():
        raise NoNativeWire(
            f"protocol {protocol!r} has no native wire; TRANSPORT=native speaks {', '.join(native_protocols())}"
        )
    if strategy in SUBTASKING and protocol not in streaming():
        raise NoNativeWire(
            f"protocol {protocol!r} on its own wire answers once per request, so an orchestrator's sub-tasks "
            f"could not leave while it works: the {strategy} strategy runs natively under "
            f"{', '.join(streaming())}, or under {protocol!r} with TRANSPORT=relay"
        )
    return protocol


def binding(protocol: str) -> Binding:
    """The native binding of ``protocol`` (its module's ``binding(protocol)`` makes it)."""
    module = PROTOCOLS[check(protocol)].native
    made: Binding = importlib.import_module(f".{module}", protocols.__name__).binding(protocol)
    return made


def built_at_start(native_preload: str, protocol: str, transport: str) -> list[str]:
    """The protocols an agent's native server builds before it listens: ``NATIVE_PRELOAD``'s, and
    its own when it runs on the native wire (so a run's first request does not load an SDK)."""
    named = [p.strip() for p in native_preload.split(",") if p.strip()]
    return list(dict.fromkeys([*named, *([protocol] if transport == "native" else [])]))


__all__ = ["AgentEndpoint", "Binding", "NativeClient", "NoNativeWire", "Peer", "TRANSPORTS", "Undelivered",
           "binding", "built_at_start", "check", "native_protocols", "streaming"]
