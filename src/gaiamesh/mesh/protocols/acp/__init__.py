"""``acp``: its envelope on the relay's WebSocket (``envelope.py``) and its own wire, the
``acp-sdk``'s server and client (``binding.py``)."""
