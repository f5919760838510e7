"""Network container entry point: the relay runs the task in TASK once and writes the results."""

from gaiamesh.cli import main

raise SystemExit(main(["relay"]))
