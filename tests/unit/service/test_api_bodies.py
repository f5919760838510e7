"""What the API's bodies say against what they take, through the app itself (no agents): a
message that asks for a field names one the body accepts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gaiamesh.service import create_app
from gaiamesh.settings import load_settings

ROOT = Path(__file__).resolve().parents[3]
KEY = "unit-access-key-0123456789"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    settings = load_settings(out_dir=tmp_path, access_key=KEY, session_secret="s" * 40, tasks_dir=ROOT / "tasks")
    with TestClient(create_app(settings), base_url="http://127.0.0.1:8080",
                    headers={"Authorization": f"Bearer {KEY}"}) as c:  # fmt: skip
        yield c


def message(r: object) -> str:
    detail = r.json()["detail"]  # type: ignore[attr-defined]
    assert r.status_code == 422 and len(detail) == 1, detail  # type: ignore[attr-defined]
    return str(detail[0]["msg"])


def test_an_empty_session_is_told_where_its_questions_go_and_that_route_takes_them(client: TestClient) -> None:
    said = message(client.post("/api/sessions", json={}))
    assert "POST /api/sessions/{id}/messages" in said and "with a 'question'" not in said
    schema = client.get("/openapi.json").json()["components"]["schemas"]
    assert "question" not in schema["SessionRequest"]["properties"]  # the body has none to send
    # a question in the body is refused in words that say where it goes, not as an "extra input"
    said = message(client.post("/api/sessions", json={"document": "The ferry ran from 1907.", "question": "When?"}))
    assert "POST /api/sessions/{id}/messages" in said and "Extra inputs" not in said
    # the route it names takes the question (its body, as the API describes it)
    made = client.post("/api/sessions", json={"document": "The ferry ran from 1907."})
    assert made.status_code == 201, made.text
    route = client.get("/openapi.json").json()["paths"]["/api/sessions/{session_id}/messages"]["post"]
    body = schema[route["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]]
    assert "question" in body["required"]


def test_an_empty_run_is_still_asked_for_its_question(client: TestClient) -> None:
    said = message(client.post("/api/runs", json={}))
    assert "with a 'question'" in said
    assert "question" in client.get("/openapi.json").json()["components"]["schemas"]["RunRequest"]["properties"]
