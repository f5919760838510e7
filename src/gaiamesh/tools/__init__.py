"""Tools, one per agent. Importing this package registers the four built-in tools."""

from . import extract, reason, search, triple  # noqa: F401  (registration side effect)
from .registry import Tool, ToolContext, get_tool, register, registered, subscriptions

__all__ = ["Tool", "ToolContext", "get_tool", "register", "registered", "subscriptions"]
