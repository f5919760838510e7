"""The service refuses with the hierarchy's kinds only, and the app turns each kind into its
HTTP status and headers in one place (``service.app.refused``): the API's credentials, the page's
login and a protocol's name."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gaiamesh.errors import ConfigError, Forbidden, Invalid, Refused, Unauthorized, exit_code
from gaiamesh.mesh.protocols import UnknownProtocol
from gaiamesh.service import create_app
from gaiamesh.service.app import refused
from gaiamesh.service.auth import AuthError
from gaiamesh.service.models import RunRequest
from gaiamesh.service.page.routes import NotLoggedIn
from gaiamesh.settings import load_settings

ROOT = Path(__file__).resolve().parents[3]
KEY = "unit-access-key-0123456789"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    settings = load_settings(out_dir=tmp_path, access_key=KEY, session_secret="s" * 40, tasks_dir=ROOT / "tasks")
    with TestClient(create_app(settings), base_url="http://127.0.0.1:8080") as c:
        yield c


def answer(exc: Refused) -> tuple[int, dict[str, str], dict[str, str]]:
    """What the app answers ``exc`` with: status, headers, body."""
    r = asyncio.run(refused(None, exc))  # type: ignore[arg-type]
    return r.status_code, dict(r.headers), json.loads(bytes(r.body))


def test_the_apis_401_names_its_scheme_and_the_kind_decides_it(client: TestClient) -> None:
    for headers in ({}, {"Authorization": "Bearer forged"}):
        r = client.get("/api/runs", headers=headers)
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer", headers
        assert r.json()["detail"]  # the reason, in the API's shape
    assert client.get("/api/runs", headers={"Authorization": f"Bearer {KEY}"}).status_code == 200
    status, headers, body = answer(AuthError("token expired"))
    assert (status, headers["www-authenticate"], body) == (401, "Bearer", {"detail": "token expired"})
    # the other refusals carry no challenge: it is the kind's, not every 401's
    assert "www-authenticate" not in answer(Unauthorized("bad signature"))[1]
    assert "www-authenticate" not in answer(Forbidden("no"))[1]


def test_the_cross_site_cookie_is_a_forbidden_refusal(client: TestClient) -> None:
    client.get(f"/?key={KEY}")  # the login cookie
    r = client.get("/api/runs", headers={"Origin": "http://evil.example"})
    assert r.status_code == 403 and "another site" in r.json()["detail"]
    assert "www-authenticate" not in r.headers


def test_the_pages_login_refusal_is_an_unauthorized_kind(client: TestClient) -> None:
    assert issubclass(NotLoggedIn, Unauthorized)
    assert NotLoggedIn("").reason == "" and "not logged in" in str(NotLoggedIn(""))
    assert str(NotLoggedIn("token expired")) == "token expired"
    r = client.get("/ui/runs")  # a fragment: the app answers the kind
    assert r.status_code == 401 and "not logged in" in r.json()["detail"]
    assert client.get("/runs").status_code == 401  # a page: the login form


def test_an_unknown_protocol_is_one_kind_with_one_status(client: TestClient) -> None:
    assert issubclass(UnknownProtocol, ConfigError) and issubclass(UnknownProtocol, Invalid)
    service = client.app.state.service  # type: ignore[attr-defined]
    with pytest.raises(UnknownProtocol, match="unknown protocol 'smoke'; available: ") as caught:
        service.runs.resolve(RunRequest(task="solar-farm", protocol="smoke"))
    status, _, body = answer(caught.value)
    assert status == 422 and body["detail"].startswith("unknown protocol 'smoke'")
    assert exit_code(caught.value) == 2  # the same kind on the command line: bad configuration
    assert service.runs.resolve(RunRequest(task="solar-farm", protocol="json")).task_id == "solar-farm"
