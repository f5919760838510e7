"""Agents written by someone else as members of a team (``AGENTS``: ``NODE_ID=TOOL@a2a+http://...``
or ``...@mcp+http://.../#tool``): the packet-text translation (``text.py``, pure) and the run's
external peers (``peers.py``: a counting tap and the protocol's SDK client per agent)."""

from .peers import ExternalPeers
from .text import STANDS_IN, failure, render, reply

__all__ = ["STANDS_IN", "ExternalPeers", "failure", "render", "reply"]
