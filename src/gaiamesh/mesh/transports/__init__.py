"""How the relay reaches its agents, chosen once per run (``TRANSPORT``): :func:`transport_for`.

``relay`` (:mod:`.websocket`): one WebSocket per agent, the relay's own wire. ``native``
(:mod:`.sdk`): each protocol's own SDK client over HTTP, through a counting tap per agent. Both
are a :class:`~.base.Transport` to the relay, which tells them apart nowhere else. Agents
written by someone else (``mesh/external/``) sit beside either (:mod:`.external`).
"""

from __future__ import annotations

from collections.abc import Mapping

from ...settings import Settings
from ..external import ExternalPeers
from ..frames import Announcement
from .base import Transport, Wire
from .external import WithExternals
from .sdk import SdkTransport
from .websocket import WebSocketTransport

__all__ = ["Transport", "Wire", "transport_for"]


def transport_for(
    settings: Settings, run_id: str, peers: int, externals: Mapping[str, Announcement] | None = None
) -> tuple[Transport, ExternalPeers | None]:
    """The transport ``settings.transport`` names, for run ``run_id`` over ``peers`` agents, with
    the external agents (``externals``: node id -> what it stands in for) beside it when there
    are any; and those agents' peers (None: none)."""
    inner: Transport = SdkTransport(settings, run_id, peers) if settings.transport == "native" else WebSocketTransport(settings)
    if not externals:
        return inner, None
    outside = ExternalPeers(settings, run_id, inner.inner, externals)
    return WithExternals(inner, outside), outside
