"""The swarm stack from a compose config written by hand: the parts of ``deploy.swarm`` that need
no docker. The stack from the repository's own compose.yaml (rendered by ``docker compose
config``) is tested in tests/integration/test_swarm_stack.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gaiamesh.deploy.swarm import StackOptions, parse_digests, stack_from_compose
from gaiamesh.errors import ConfigError

DIGEST = "sha256:" + "ab" * 32


def stack(config: dict[str, Any], **options: Any) -> dict[str, Any]:
    """The stack file (comment lines, then JSON, which is YAML), read back."""
    text = stack_from_compose(config, StackOptions(**options)).render()
    return dict(json.loads("\n".join(line for line in text.splitlines() if not line.startswith("#"))))


def test_a_service_without_an_image_gets_the_name_compose_builds() -> None:
    env = {"GAIAMESH_ACCESS_KEY": "a", "GAIAMESH_SESSION_SECRET": "b"}
    config = {"name": "p", "services": {"network": {"build": {"context": "."}, "environment": env}}}
    assert stack(config)["services"]["network"]["image"] == "127.0.0.1:5000/p-network"


def test_the_service_secrets_must_have_values_when_written_to_files() -> None:
    config = {"services": {"network": {"environment": {"GAIAMESH_ACCESS_KEY": "", "GAIAMESH_SESSION_SECRET": "s"}}}}
    with pytest.raises(ConfigError, match="GAIAMESH_ACCESS_KEY is empty"):
        stack_from_compose(config, StackOptions(secrets_dir="/tmp/x"))
    # external secrets are created apart from .env: an empty value there is no obstacle
    assert "gaiamesh_access_key" in stack_from_compose(config, StackOptions()).document["secrets"]


def test_restart_policies_and_tmpfs_options() -> None:
    env = {"GAIAMESH_ACCESS_KEY": "a", "GAIAMESH_SESSION_SECRET": "b"}
    services = {"network": {"environment": env, "restart": "on-failure:3"}, "job": {"image": "j"}}
    out = stack({"services": services})["services"]
    assert out["network"]["deploy"]["restart_policy"] == {"condition": "on-failure", "max_attempts": 3}
    assert out["job"]["deploy"]["restart_policy"] == {"condition": "none"}  # compose's default: no restart
    with pytest.raises(ConfigError, match="size=N"):
        stack({"services": {"network": {"environment": env, "tmpfs": ["/tmp:mode=1777"]}}})
    with pytest.raises(ConfigError, match="no 'network' service"):
        stack({"services": {"job": {"image": "j"}}})


def test_digests_file() -> None:
    assert parse_digests(json.dumps({"a:1": DIGEST})) == {"a:1": DIGEST}
    for bad in ("[]", "{", '{"a": 1}'):
        with pytest.raises(ConfigError, match="digests file"):
            parse_digests(bad)
