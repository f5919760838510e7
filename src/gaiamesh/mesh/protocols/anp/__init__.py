"""``anp``: its envelope on the relay's WebSocket (``envelope.py``) and its own wire with the
``anp`` SDK: the agent's server (``server.py``), the relay's client (``client.py``), the did:wba
identities and documents both use (``did.py``), the relay's DID host (``didhost.py``), joined in
``binding.py``."""
