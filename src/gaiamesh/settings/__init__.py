"""One settings object, read once from the environment (and `.env`) at each entry point.

No other module reads ``os.environ``: entry points build a :class:`Settings` and pass it down.
The object is made of one model per concern (``parts.py``); ``AGENTS`` is read into agent specs
by ``agentspec.py``. Every name is imported from here, ``gaiamesh.settings``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic_settings import BaseSettings, SettingsConfigDict

from ..errors import ConfigError
from .agentspec import DNS_PREFIX, AgentSpec, ExternalAgent, parse_agents
from .parts import (
    STRATEGIES,
    TASK_STRATEGIES,
    AgentSettings,
    FaultSettings,
    MeshSettings,
    ModelSettings,
    PathSettings,
    RoutingMode,
    RunSettings,
    ServiceSettings,
    Strategy,
    ToolSettings,
)

__all__ = [
    "DNS_PREFIX", "SECRETS", "SECRET_VARIABLES", "STRATEGIES", "TASK_STRATEGIES", "AgentSettings", "AgentSpec",
    "ExternalAgent",
    "FaultSettings", "MeshSettings", "ModelSettings", "PathSettings", "RoutingMode", "RunSettings",
    "ServiceSettings", "Settings", "Strategy", "ToolSettings", "load_settings", "parse_agents",
    "secrets_from_files",
]  # fmt: skip

SECRETS = frozenset({"access_key", "session_secret", "openai_api_key", "mesh_token"})


class Settings(
    BaseSettings, ModelSettings, MeshSettings, ToolSettings, AgentSettings, PathSettings, RunSettings, ServiceSettings,
    FaultSettings,
):
    """Every knob, read once at an entry point; field names map to upper-case environment variables.

    Each concern is its own model (``parts.py``), and a ``Settings`` is each of them: a part of the code
    declares the one it reads (``LLMClient.from_settings(settings: ModelSettings)``) and is handed
    the whole, so it cannot reach for a knob of another concern without saying so in its type."""

    model_config = SettingsConfigDict(
        env_file=".env", env_file_encoding="utf-8", extra="ignore", populate_by_name=True
    )

    def public_dict(self) -> dict[str, object]:
        """The resolved configuration for the run archive, without secrets (keys stay in
        KEYS_DIR; the service's access key, its token secret and the OpenAI key are left out)."""
        return self.model_dump(mode="json", exclude=set(SECRETS))


# The environment variable of each secret setting. ``NAME_FILE`` names a file that holds it
# instead: swarm hands secrets to a container as files (/run/secrets/...), never as variables.
SECRET_VARIABLES = {
    "access_key": "GAIAMESH_ACCESS_KEY",
    "session_secret": "GAIAMESH_SESSION_SECRET",
    "openai_api_key": "OPENAI_API_KEY",
    "mesh_token": "GAIAMESH_MESH_TOKEN",
}


def secrets_from_files(environ: dict[str, str]) -> dict[str, str]:
    """Each secret whose ``NAME_FILE`` is set, read from that file (one trailing newline
    dropped: ``echo`` and editors add one). ``NAME`` and ``NAME_FILE`` together are refused,
    since either one silently winning would hide a stale value."""
    found: dict[str, str] = {}
    for field, name in SECRET_VARIABLES.items():
        path = environ.get(f"{name}_FILE")
        if not path:
            continue
        if environ.get(name):
            raise ConfigError(f"{name} and {name}_FILE are both set: keep one")
        try:
            found[field] = Path(path).read_text(encoding="utf-8").removesuffix("\n")
        except OSError as exc:
            raise ConfigError(f"{name}_FILE: cannot read {path}: {exc.strerror or exc}") from exc
    return found


def load_settings(**overrides: Any) -> Settings:
    """Build the settings once per process: environment, then ``.env``, then defaults.

    ``GAIAMESH_ENV_FILE`` names another dotenv file; set it empty to read none (the tests do,
    so that a developer's ``.env`` cannot change what they check). A secret may come from the
    file its ``NAME_FILE`` variable names (:func:`secrets_from_files`); overrides still win.
    """
    env_file = os.environ.get("GAIAMESH_ENV_FILE", ".env") or None
    overrides = secrets_from_files(dict(os.environ)) | overrides
    return Settings(_env_file=env_file, **overrides)  # type: ignore[call-arg]
