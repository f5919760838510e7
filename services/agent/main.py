"""Agent container entry point: one MeshAgent, configured by NODE_ID, TOOL and PORT."""

from gaiamesh.cli import main

raise SystemExit(main(["agent"]))
