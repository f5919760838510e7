"""The WebSocket subprotocol a run's connections speak: ``gaiamesh.<protocol>``, named here once
for both ends. The relay offers it (:func:`subprotocol`); the agent reads the wire protocol
back from what was offered (:func:`protocol_of`)."""

from __future__ import annotations

from websockets.typing import Subprotocol

PREFIX = "gaiamesh."


def subprotocol(protocol: str) -> Subprotocol:
    """The WebSocket subprotocol that names a wire protocol: a run's connections all speak it."""
    return Subprotocol(f"{PREFIX}{protocol}")


def protocol_of(name: str) -> str | None:
    """The wire protocol a subprotocol names, or None when it is not one of ours."""
    return name.removeprefix(PREFIX) if name.startswith(PREFIX) else None
