"""The page's layer through the app itself (no agents, no runs): login and its cookie, what is
refused without it, the fragments, and that nothing the page serves points outside."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gaiamesh.service import create_app
from gaiamesh.service.auth import COOKIE
from gaiamesh.service.page import STATIC, comparison, group_turns
from gaiamesh.settings import load_settings

ROOT = Path(__file__).resolve().parents[3]
KEY = "unit-access-key-0123456789"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    settings = load_settings(
        out_dir=tmp_path, access_key=KEY, session_secret="s" * 40, tasks_dir=ROOT / "tasks", max_doc_bytes=100
    )
    with TestClient(create_app(settings), base_url="http://127.0.0.1:8080") as c:
        yield c


def test_the_login_url_trades_the_key_for_an_httponly_strict_cookie(client: TestClient) -> None:
    r = client.get("/", follow_redirects=False)
    assert r.status_code == 401 and 'name="key"' in r.text  # the page asks for the key
    wrong = client.get("/?key=nope", follow_redirects=False)
    assert (
        wrong.status_code == 401
        and "not the access key" in wrong.text
        and COOKIE not in wrong.headers.get("set-cookie", "")
    )
    r = client.get(f"/?key={KEY}", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/"  # the key leaves the address bar
    cookie = r.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}=") and "HttpOnly" in cookie and "SameSite=strict" in cookie
    assert KEY not in cookie
    page = client.get("/")
    assert page.status_code == 200 and "Sessions" in page.text and "solar-farm" in page.text
    assert client.get("/runs").status_code == 200
    assert client.get("/api/runs").json() == []  # the cookie works on the API too
    client.post("/logout")
    assert client.get("/", follow_redirects=False).status_code == 401
    assert client.get("/api/runs").status_code == 401


def test_without_the_cookie_nothing_but_the_login_form(client: TestClient) -> None:
    for path in ["/", "/runs", "/runs/abc"]:
        r = client.get(path)
        assert r.status_code == 401 and "Log in" in r.text, path
    for method, path in [("GET", "/ui/runs"), ("POST", "/ui/runs"), ("POST", "/ui/sessions"), ("GET", "/ui/compare"),
                         ("GET", "/ui/sessions/x/conversation"), ("POST", "/ui/sessions/x/end")]:  # fmt: skip
        r = client.request(method, path, json={})
        assert r.status_code == 401 and "not logged in" in r.json()["detail"], (method, path)
    client.cookies.set(COOKIE, "forged.token.value")
    r = client.get("/")
    assert r.status_code == 401 and "not an access key or a valid session token" in r.text


def test_the_cookie_does_not_act_for_another_sites_page(client: TestClient) -> None:
    client.get(f"/?key={KEY}")
    r = client.post("/ui/sessions", json={"task": "solar-farm"}, headers={"Origin": "http://evil.example"})
    assert r.status_code == 401 and "another site" in r.json()["detail"]
    r = client.post("/api/sessions", json={"task": "solar-farm"}, headers={"Origin": "http://evil.example"})
    assert r.status_code == 403 and "another site" in r.json()["detail"]
    ok = client.post("/ui/sessions", json={"task": "solar-farm"}, headers={"Origin": "http://127.0.0.1:8080"})
    assert ok.status_code == 201


def test_sessions_from_the_page_start_end_and_show_their_state(client: TestClient) -> None:
    client.get(f"/?key={KEY}")
    r = client.post("/ui/sessions", json={"task": "solar-farm", "protocol": "binary"})
    assert r.status_code == 201
    session_id = r.headers["HX-Redirect"].split("=", 1)[1]
    page = client.get(f"/?session={session_id}")
    assert 'id="session-state">INIT<' in page.text and "session started" in page.text
    conv = client.get(f"/ui/sessions/{session_id}/conversation")
    version = re.search(r'data-version="([^"]+)"', conv.text)
    assert conv.status_code == 200 and version
    unchanged = client.get(f"/ui/sessions/{session_id}/conversation", params={"version": version.group(1)})
    assert unchanged.status_code == 204  # nothing new: the page keeps what it shows
    assert client.post(f"/ui/sessions/{session_id}/end").status_code == 204
    assert 'id="session-state">STOP<' in client.get(f"/ui/sessions/{session_id}/conversation").text
    # bad input gets the API's words
    too_big = client.post("/ui/sessions", json={"document": "x" * 101})
    assert too_big.status_code == 413 and "MAX_DOC_BYTES" in too_big.json()["detail"]
    both = client.post("/ui/sessions", json={"task": "solar-farm", "document": "text"})
    assert both.status_code == 422 and "not both" in str(both.json()["detail"])
    missing = client.post("/ui/runs", json={"tasks": ["no-such-task"]})
    assert missing.status_code == 404 and "no bundled task" in missing.json()["detail"]
    assert client.post("/ui/runs", json={"tasks": []}).status_code == 422


def test_the_page_loads_nothing_from_outside(client: TestClient) -> None:
    client.get(f"/?key={KEY}")
    pages = [client.get("/").text, client.get("/runs").text]
    served = [p.read_text(errors="replace") for p in STATIC.glob("*.js")] + [(STATIC / "app.css").read_text()]
    for text in pages:
        for ref in re.findall(r'(?:src|href)="([^"]+)"', text):
            assert ref.startswith(("/", "#")), ref
    for text in served:  # our own scripts and styles: no absolute URL but the SVG namespace
        assert not [u for u in re.findall(r"https?://[^\s\"')]+", text) if u != "http://www.w3.org/2000/svg"]
    for name in ["vendor/htmx.min.js", "vendor/chart.min.js", "app.js", "mesh.js", "app.css"]:
        assert client.get(f"/static/{name}").status_code == 200, name


def test_history_turns_and_comparison_by_plain_calls() -> None:
    from gaiamesh.service.models import Message, MessageType

    msgs = [
        Message(id=1, type=MessageType.SYSTEM, run_id=None, content={"text": "session started"}, created=0),
        Message(id=2, type=MessageType.QUESTION, run_id="r1", content={"text": "q?"}, created=1),
        Message(id=3, type=MessageType.FRAME, run_id="r1", content={}, created=2),
        Message(id=4, type=MessageType.FRAME, run_id="r1", content={}, created=2),
        Message(id=5, type=MessageType.ANSWER, run_id="r1", content={"text": "a"}, created=3),
    ]
    turns = group_turns(msgs, {})
    assert [t["kind"] for t in turns] == ["system", "turn"]
    assert (
        turns[1]["frames"] == 2
        and turns[1]["answer"] == {"text": "a"}
        and turns[1]["question"] == {"text": "q?"}
    )
    assert comparison([]) == {
        "labels": [],
        "runs": [],
        "bytes": [],
        "header_share": [],
        "seconds": [],
        "quality": [],
    }
