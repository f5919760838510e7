"""The wire, shared by every strategy: typed frames, the protocol adapters, routing, the relay's
pure core and its asyncio transport. It knows nothing of models: the agents that serve the
tools live in ``agents/``."""
