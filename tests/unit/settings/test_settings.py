"""Settings by concern: one environment read, each part a model of its own that code declares."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from gaiamesh.agents.teams import agent_specs
from gaiamesh.errors import ConfigError
from gaiamesh.models.llm import LLMClient
from gaiamesh.settings import (
    AgentSettings,
    FaultSettings,
    MeshSettings,
    ModelSettings,
    PathSettings,
    RunSettings,
    ServiceSettings,
    Settings,
    ToolSettings,
    load_settings,
    secrets_from_files,
)

PARTS = (
    ModelSettings, MeshSettings, ToolSettings, AgentSettings, PathSettings, RunSettings, ServiceSettings, FaultSettings,
)  # fmt: skip


def test_every_knob_belongs_to_exactly_one_part() -> None:
    owners: dict[str, list[str]] = {}
    for part in PARTS:
        for name in part.model_fields:
            owners.setdefault(name, []).append(part.__name__)
    assert {n: o for n, o in owners.items() if len(o) > 1} == {}
    assert set(owners) == set(Settings.model_fields)


def test_the_environment_reaches_each_part(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MODEL", "qwen2.5:0.5b")
    monkeypatch.setenv("CHUNK_SIZE", "123")
    monkeypatch.setenv("GAIAMESH_ACCESS_KEY", "k" * 24)
    monkeypatch.setenv("WEB_URL", "http://web.internal:8090")
    s = load_settings()
    assert (s.model, s.chunk_size, s.access_key) == ("qwen2.5:0.5b", 123, "k" * 24)
    assert s.download_allowlist() == ["web.internal"]  # a ToolSettings method on the whole
    assert all(isinstance(s, part) for part in PARTS)


def test_a_part_stands_alone_with_its_own_checks() -> None:
    assert agent_specs(MeshSettings(strategy="orchestrated"))[0].tool == "orchestrator"  # AGENTS unset: its team
    with pytest.raises(ValidationError, match="must be positive"):
        MeshSettings(chunk_size=0)
    with pytest.raises(ValidationError, match="must be positive"):
        ServiceSettings(max_queued_runs=0)
    with pytest.raises(ValidationError, match="must be positive"):
        load_settings(max_doc_bytes=0)  # each part's checks also hold on the whole


def test_code_that_declares_one_part_takes_that_part_alone() -> None:
    client = LLMClient.from_settings(ModelSettings(ollama_host="http://127.0.0.1:1", model="m:1", llm_seed=7))
    assert (client.backend.name, client.host) == ("ollama", "http://127.0.0.1:1")
    assert (client.backend.model, client.backend.options["seed"]) == ("m:1", 7)  # type: ignore[attr-defined]


def test_the_archived_settings_hold_no_secret() -> None:
    s = load_settings(access_key="a" * 24, session_secret="b" * 32)
    public = s.public_dict()
    assert "access_key" not in public and "session_secret" not in public and public["chunk_size"] == s.chunk_size


def test_a_secret_comes_from_the_file_its_FILE_variable_names(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # swarm hands secrets over as files (/run/secrets/...): GAIAMESH_ACCESS_KEY_FILE and the like
    for name in ("GAIAMESH_ACCESS_KEY", "GAIAMESH_SESSION_SECRET", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "key").write_text("k" * 24 + "\n")  # the newline `echo` adds is not part of it
    (tmp_path / "secret").write_text("s" * 32)
    monkeypatch.setenv("GAIAMESH_ACCESS_KEY_FILE", str(tmp_path / "key"))
    monkeypatch.setenv("GAIAMESH_SESSION_SECRET_FILE", str(tmp_path / "secret"))
    s = load_settings()
    assert (s.access_key, s.session_secret, s.openai_api_key) == ("k" * 24, "s" * 32, "")
    assert load_settings(access_key="o" * 24).access_key == "o" * 24  # the command line still wins
    assert secrets_from_files({"OPENAI_API_KEY_FILE": str(tmp_path / "secret")}) == {"openai_api_key": "s" * 32}


def test_a_secret_file_that_cannot_be_used_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "key").write_text("k" * 24)
    with pytest.raises(ConfigError, match="GAIAMESH_ACCESS_KEY and GAIAMESH_ACCESS_KEY_FILE are both set"):
        secrets_from_files({"GAIAMESH_ACCESS_KEY": "x", "GAIAMESH_ACCESS_KEY_FILE": str(tmp_path / "key")})
    monkeypatch.setenv("GAIAMESH_SESSION_SECRET_FILE", str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match=r"GAIAMESH_SESSION_SECRET_FILE: cannot read .*missing"):
        load_settings()
