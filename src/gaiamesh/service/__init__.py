"""The long-lived network service: runs on demand, sessions, live events (``gaiamesh serve``)."""

from .app import create_app, serve
from .service import MeshService

__all__ = ["MeshService", "create_app", "serve"]
