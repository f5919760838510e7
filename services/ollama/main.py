"""Model-server container entry point: the Ollama-compatible API on 0.0.0.0:11434."""

from gaiamesh.cli import main

raise SystemExit(main(["serve-model", "--host", "0.0.0.0", "--port", "11434"]))
