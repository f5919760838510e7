"""``a2a``: its envelope on the relay's WebSocket (``envelope.py``) and its own wire, the
``a2a-sdk``'s server and client (``binding.py``)."""
