"""The pipeline's tools (seed 000), one per agent: search, extract, triple, reason. Each is
declared where it is written (:class:`~gaiamesh.tools.tool.Tool`: name, consumed and emitted
packet types, its run function) and listed in :data:`TOOLS`; nothing registers itself on import."""

from ..tools.tool import Tool
from .extract import TOOL as EXTRACT
from .reason import TOOL as REASON
from .search import TOOL as SEARCH
from .triple import TOOL as TRIPLE

TOOLS: tuple[Tool, ...] = (SEARCH, EXTRACT, TRIPLE, REASON)

__all__ = ["TOOLS"]
