"""The service's ACP endpoint without agents (``service/acp.py``): who it lets in, the one agent
its manifest lists, and how a run's input becomes a document and a question, or ACP's
``invalid_input``."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from acp_sdk.models import Message, MessagePart
from fastapi.testclient import TestClient

from gaiamesh.service import create_app
from gaiamesh.service.acp import read_input
from gaiamesh.service.standard import BadAsk
from gaiamesh.settings import load_settings

ROOT = Path(__file__).resolve().parents[3]
KEY = "unit-access-key-0123456789"
AUTH = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    settings = load_settings(out_dir=tmp_path, access_key=KEY, session_secret="s" * 40, tasks_dir=ROOT / "tasks")
    with TestClient(create_app(settings), base_url="http://gaiamesh.example:8080") as c:
        yield c


def test_the_parts_of_a_runs_input() -> None:
    assert read_input([Message(parts=[MessagePart(content="The doc."), MessagePart(content="What?")])]) == (
        "The doc.", "What?")  # fmt: skip
    filed = MessagePart(content=base64.b64encode(b"A file.").decode(), content_encoding="base64", name="doc.txt")
    assert read_input([Message(parts=[filed, MessagePart(content="What?")])]) == ("A file.", "What?")
    with pytest.raises(BadAsk, match="without inline content"):
        read_input([Message(parts=[MessagePart(content_url="http://elsewhere/doc"), MessagePart(content="What?")])])
    with pytest.raises(BadAsk, match="application/json part"):
        read_input([Message(parts=[MessagePart(content="{}", content_type="application/json")])])


def test_only_the_access_key_opens_it(client: TestClient) -> None:
    for path, method in (("/acp/agents", "GET"), ("/acp/runs", "POST")):
        bare = client.request(method, path, json={})
        assert bare.status_code == 401 and "no credentials" in bare.json()["detail"], (path, bare.text)
        assert bare.json()["code"] == "unauthorized" and bare.json()["message"] == bare.json()["detail"]
        wrong = client.request(method, path, json={}, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and "not an access key" in wrong.json()["message"]


def test_the_manifest_lists_one_agent(client: TestClient) -> None:
    (agent,) = client.get("/acp/agents", headers=AUTH).json()["agents"]
    assert agent["name"] == "gaia-mesh" and "question about a document" in agent["description"]
    assert agent["input_content_types"] == ["text/plain"] and agent["output_content_types"] == ["text/plain"]


def test_a_run_without_a_document_fails_with_invalid_input(client: TestClient) -> None:
    run = {"agent_name": "gaia-mesh", "mode": "sync", "input": [{"role": "user", "parts": [{"content": "What?"}]}]}
    # no Content-Type, as the SDK's own client posts: read as JSON (the binding's JsonByDefault)
    r = client.post("/acp/runs", content=json.dumps(run), headers=AUTH)
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "failed" and r.json()["error"]["code"] == "invalid_input"
    assert "no document" in r.json()["error"]["message"]
