"""``agora``: its envelope on the relay's WebSocket (``envelope.py``), its protocol document
(``documents/``) and its own wire, the ``agora-protocol`` SDK's receiver (``server.py``) and
sender (``client.py``), joined in ``binding.py``."""
