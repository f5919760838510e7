"""The service's MCP endpoint without agents: who it lets in, at both of its paths, what it
tells a host about its tools, and how a run's end becomes a reply (``service/mcp.py``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from gaiamesh.errors import RunStatus
from gaiamesh.evaluation.metrics import RunMetrics
from gaiamesh.service import create_app
from gaiamesh.service.mcp import _reply
from gaiamesh.service.models import RunState, RunView
from gaiamesh.settings import load_settings

ROOT = Path(__file__).resolve().parents[3]
KEY = "unit-access-key-0123456789"
ACCEPT = {"Accept": "application/json, text/event-stream"}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    settings = load_settings(out_dir=tmp_path, access_key=KEY, session_secret="s" * 40, tasks_dir=ROOT / "tasks")
    with TestClient(create_app(settings), base_url="http://gaiamesh.example:8080") as c:
        yield c


def messages(body: str) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an SSE answer."""
    return [json.loads(line[5:]) for line in body.splitlines() if line.startswith("data:") and line[5:].strip()]


def test_only_the_access_key_opens_it_at_both_paths(client: TestClient) -> None:
    for path in ("/mcp", "/mcp/"):
        bare = client.post(path, json=INITIALIZE, headers=ACCEPT, follow_redirects=False)
        assert bare.status_code == 401 and "no credentials" in bare.json()["detail"], (path, bare.text)
        assert bare.headers["www-authenticate"] == "Bearer"
        wrong = client.post(path, json=INITIALIZE, headers={**ACCEPT, "Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and "not an access key" in wrong.json()["detail"]
        token, _ = client.app.state.service.authority.issue("a-session")  # type: ignore[attr-defined]
        session = client.post(path, json=INITIALIZE, headers={**ACCEPT, "Authorization": f"Bearer {token}"})
        assert session.status_code == 403 and "access key" in session.json()["detail"]
        # any Host the deployment gives the service (no allow-list): the key is the check
        ok = client.post(path, json=INITIALIZE, headers={**ACCEPT, "Authorization": f"Bearer {KEY}"},
                         follow_redirects=False)  # fmt: skip
        assert ok.status_code == 200 and messages(ok.text)[0]["result"]["serverInfo"]["name"] == "gaiamesh"


def test_the_login_cookie_does_not_act_on_it(client: TestClient) -> None:
    client.get(f"/?key={KEY}")  # the page's login cookie, now held by the client
    r = client.post("/mcp", json=INITIALIZE, headers=ACCEPT)
    assert r.status_code == 401 and "no credentials" in r.json()["detail"]


def test_a_malformed_body_gets_json_rpcs_parse_error(client: TestClient) -> None:
    r = client.post("/mcp/", content=b"{not json", headers={**ACCEPT, "Authorization": f"Bearer {KEY}",
                                                            "Content-Type": "application/json"})  # fmt: skip
    assert r.status_code == 400 and r.json()["error"]["code"] == -32700


def test_the_tools_a_host_is_shown(client: TestClient) -> None:
    auth = {**ACCEPT, "Authorization": f"Bearer {KEY}"}
    opened = client.post("/mcp", json=INITIALIZE, headers=auth)
    auth["mcp-session-id"] = opened.headers["mcp-session-id"]
    auth["mcp-protocol-version"] = "2025-06-18"
    client.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=auth)
    listed = client.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=auth)
    tools = {t["name"]: t for t in messages(listed.text)[0]["result"]["tools"]}
    assert sorted(tools) == ["ask", "list_tasks", "run_task"]
    ask = tools["ask"]["inputSchema"]
    assert sorted(ask["required"]) == ["document", "question"] and "plain text" in ask["properties"]["document"]["description"]
    assert tools["run_task"]["inputSchema"]["required"] == ["name"]
    called = client.post("/mcp", json={"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                       "params": {"name": "list_tasks", "arguments": {}}}, headers=auth)  # fmt: skip
    result = messages(called.text)[0]["result"]
    assert not result["isError"] and "glass-museum: Who founded the Veldt Glass Museum?" in result["content"][0]["text"]
    unknown = client.post("/mcp", json={"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                                        "params": {"name": "run_task", "arguments": {"name": "nope"}}}, headers=auth)  # fmt: skip
    result = messages(unknown.text)[0]["result"]
    assert result["isError"] and "no bundled task named 'nope': list_tasks names them" in result["content"][0]["text"]
    assert str(ROOT) not in result["content"][0]["text"]  # the service's folders are not the caller's


def view(metrics: RunMetrics | None, state: RunState = RunState.FINISHED, error: str | None = None) -> RunView:
    return RunView(id="0123456789abcdef", state=state, session_id=None, task_id="document", question="Who?",
                   created=0.0, error=error, strategy="pipeline", protocol="json", transport="relay", metrics=metrics)  # fmt: skip


def metrics(status: RunStatus, **fields: Any) -> RunMetrics:
    base = {"run_id": "0123456789abcdef", "task_id": "document", "question": "Who?", "answer": "", "status": status}
    return RunMetrics.model_construct(**{**base, **fields})


def test_the_reply_names_the_run_and_a_failed_run_is_a_tool_error() -> None:
    ok = _reply(view(metrics(RunStatus.OK, prediction="Rupert Ashcombe")), "http://h:1")
    text = ok.content[0].text  # type: ignore[union-attr]
    assert not ok.is_error and text.splitlines()[0] == "Rupert Ashcombe"
    assert "run 0123456789abcdef" in text and "http://h:1/api/runs/0123456789abcdef/artifacts" in text
    timed_out = _reply(view(metrics(RunStatus.TIMEOUT, error="no answer within RUN_TIMEOUT")), "")
    assert timed_out.is_error and "ended timeout: no answer within RUN_TIMEOUT" in timed_out.content[0].text  # type: ignore[union-attr]
    cancelled = _reply(view(None, RunState.CANCELLED, "cancelled through the API"), "")
    assert cancelled.is_error and "ended cancelled: cancelled through the API" in cancelled.content[0].text  # type: ignore[union-attr]
