"""The live web page served by the network service (templates, static files, routes): it sits
below the service's API and works through :class:`~gaiamesh.service.service.MeshService`."""

from .routes import STATIC, router
from .views import comparison, group_turns

__all__ = ["STATIC", "comparison", "group_turns", "router"]
