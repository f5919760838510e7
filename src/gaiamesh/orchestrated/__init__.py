"""The orchestrated strategy (seed 004): an orchestrator that plans, executes through the
relay's sub-task and result queues, and replans; research and utility workers.

Importing the package registers its agents' tools (``orchestrator``, ``research``, ``utility``).
"""

from . import orchestrator, workers  # noqa: F401  (registration)
