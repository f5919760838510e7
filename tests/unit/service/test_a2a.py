"""The service's A2A endpoint without agents (``service/a2a.py``): who it lets in, the card it
shows (at the address the caller used), and how a message's parts become a document and a
question, or the protocol's invalid-params error."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from a2a import types as a2a_types
from a2a.helpers import new_raw_part, new_text_part, new_url_part
from a2a.server.context import ServerCallContext
from fastapi.testclient import TestClient

from gaiamesh.service import create_app
from gaiamesh.service.a2a import RecentTasks, read_message
from gaiamesh.service.standard import BadAsk
from gaiamesh.settings import load_settings

ROOT = Path(__file__).resolve().parents[3]
KEY = "unit-access-key-0123456789"
AUTH = {"Authorization": f"Bearer {KEY}"}
CARD = "/a2a/.well-known/agent-card.json"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    settings = load_settings(out_dir=tmp_path, access_key=KEY, session_secret="s" * 40, tasks_dir=ROOT / "tasks")
    with TestClient(create_app(settings), base_url="http://gaiamesh.example:8080") as c:
        yield c


def message(*parts: a2a_types.Part) -> a2a_types.Message:
    return a2a_types.Message(message_id="m", role=a2a_types.Role.ROLE_USER, parts=list(parts))


def test_the_parts_of_a_message() -> None:
    assert read_message(message(new_text_part("The doc."), new_text_part("What?"))) == ("The doc.", "What?")
    filed = message(new_raw_part("Die Straße.".encode(), "text/plain", "doc.txt"), new_text_part("Was?"))
    assert read_message(filed) == ("Die Straße.", "Was?")
    with pytest.raises(BadAsk, match="by URL"):
        read_message(message(new_url_part("http://elsewhere/doc.txt"), new_text_part("What?")))
    with pytest.raises(BadAsk, match="image/png"):
        read_message(message(new_raw_part(b"\x89PNG", "image/png"), new_text_part("What?")))


def test_only_the_access_key_opens_it(client: TestClient) -> None:
    for path, method in ((CARD, "GET"), ("/a2a/", "POST")):
        bare = client.request(method, path, json={})
        assert bare.status_code == 401 and "no credentials" in bare.json()["detail"], (path, bare.text)
        assert bare.headers["www-authenticate"] == "Bearer"
        wrong = client.request(method, path, json={}, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and "not an access key" in wrong.json()["detail"]
    token, _ = client.app.state.service.authority.issue("a-session")  # type: ignore[attr-defined]
    session = client.get(CARD, headers={"Authorization": f"Bearer {token}"})
    assert session.status_code == 403 and "A2A endpoint takes the access key" in session.json()["detail"]


def test_the_card(client: TestClient) -> None:
    card = client.get(CARD, headers={**AUTH, "Host": "mesh.example:9000"}).json()
    assert card["name"] == "Gaia Mesh" and "document" in card["description"]
    assert card["supportedInterfaces"][0]["url"] == "http://mesh.example:9000/a2a/"  # as the caller reached it
    assert card["supportedInterfaces"][0]["protocolBinding"] == "JSONRPC"
    assert card["capabilities"]["streaming"] is True
    assert "text/plain" in card["defaultInputModes"] and card["defaultOutputModes"] == ["text/plain"]
    (skill,) = card["skills"]
    assert skill["id"] == "ask" and skill["name"] == "answer a question about a document"
    assert "question last" in skill["description"]
    assert card["securitySchemes"]["gaiamesh-access-key"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"


def test_a_message_without_a_document_is_invalid_params(client: TestClient) -> None:
    send = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "Only a question?"}]}}}  # fmt: skip
    r = client.post("/a2a/", json=send, headers={**AUTH, "A2A-Version": "1.0"})
    assert r.status_code == 200 and r.json()["error"]["code"] == -32602, r.text
    assert "no document" in r.json()["error"]["message"]


def test_the_task_store_keeps_the_last_tasks() -> None:
    async def kept() -> list[bool]:
        store, context = RecentTasks(kept=2), ServerCallContext()
        for task_id in ("a", "b", "a", "c"):  # "a" saved again (an update): "b" is the oldest
            await store.save(a2a_types.Task(id=task_id, context_id="x"), context)
        return [await store.get(t, context) is not None for t in ("a", "b", "c")]

    assert asyncio.run(kept()) == [True, False, True]
