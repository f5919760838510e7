"""uvicorn's old name ``LoopSetupType`` set to its new one, before anything imports
``acp_sdk.server`` (whose uvicorn runner annotates a parameter with it; renamed
``LoopFactoryType`` in uvicorn 0.36: binding.py's docstring). Imported for that effect alone by
``server.py`` and ``store.py``, so neither needs the other first."""

from __future__ import annotations

import uvicorn.config

if not hasattr(uvicorn.config, "LoopSetupType"):
    uvicorn.config.LoopSetupType = uvicorn.config.LoopFactoryType  # type: ignore[attr-defined]
