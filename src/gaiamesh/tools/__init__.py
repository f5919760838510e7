"""The declared tool type and the context a tool may use (:mod:`gaiamesh.tools.tool`). It sits
below the strategies that declare their tools with it (``pipeline/``, ``orchestrated/``) and
the agents that serve them (``agents/``)."""
