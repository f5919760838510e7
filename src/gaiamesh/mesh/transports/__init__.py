"""How the relay reaches its agents, chosen once per run (``TRANSPORT``): :func:`transport_for`.

``relay`` (:mod:`.websocket`): one WebSocket per agent, the relay's own wire. ``native``
(:mod:`.sdk`): each protocol's own SDK client over HTTP, through a counting tap per agent. Both
are a :class:`~.base.Transport` to the relay, which tells them apart nowhere else.
"""

from __future__ import annotations

from ...settings import Settings
from .base import Transport, Wire
from .sdk import SdkTransport
from .websocket import WebSocketTransport

__all__ = ["Transport", "Wire", "transport_for"]


def transport_for(settings: Settings, run_id: str, peers: int) -> Transport:
    """The transport ``settings.transport`` names, for run ``run_id`` over ``peers`` agents."""
    if settings.transport == "native":
        return SdkTransport(settings, run_id, peers)
    return WebSocketTransport(settings)
