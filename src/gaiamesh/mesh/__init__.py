"""The wire, shared by every strategy: typed frames, the protocol adapters, routing, the relay's
pure core and its asyncio transport, and the agent that serves one declared tool."""
