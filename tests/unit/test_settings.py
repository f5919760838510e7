"""Settings by concern: one environment read, each part a model of its own that code declares."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

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
    assert MeshSettings(strategy="orchestrated").agents.startswith("0=orchestrator@")
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
