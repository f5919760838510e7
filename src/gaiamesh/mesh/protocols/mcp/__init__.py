"""``mcp``: its envelope on the relay's WebSocket (``envelope.py``) and its own wire with the
official ``mcp`` SDK: the agent's server (``server.py``), the relay's client (``client.py``),
joined in ``binding.py``."""
