"""The agents: :class:`~gaiamesh.agents.agent.MeshAgent` serves one declared tool behind the
wire; :mod:`~gaiamesh.agents.teams` declares each strategy's team once, from the strategy's own
tools; :mod:`~gaiamesh.agents.catalog` looks a tool up by name. It knows the model client; the
wire (``mesh/``) does not."""
