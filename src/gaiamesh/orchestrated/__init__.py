"""The orchestrated strategy (seed 004): an orchestrator that plans, executes through the
relay's sub-task and result queues, and replans; research and utility workers. Their agents'
tools are declared in :data:`TOOLS` (``orchestrator``, ``research``, ``utility``)."""

from ..tools.tool import Tool
from .orchestrator import TOOL as ORCHESTRATOR
from .workers import WORKER_TOOLS

TOOLS: tuple[Tool, ...] = (ORCHESTRATOR, *WORKER_TOOLS)

__all__ = ["TOOLS"]
