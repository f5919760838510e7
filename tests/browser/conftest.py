"""Real Chromium (Debian's package, driven by Playwright through ``executable_path``; never
``playwright install``) on the real service, the real agents and the real model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext

from ..api.conftest import Service
from ..conftest import ROOT, replayed

SHOTS = ROOT / "build" / "screenshots"  # the README's screenshots are copied from here


class Visit:
    """One browser context on the service, recording every address the page asks for."""

    def __init__(self, browser: Browser, service: Service, width: int = 1280, height: int = 800) -> None:
        self.service = service
        self.context: BrowserContext = browser.new_context(viewport={"width": width, "height": height})
        self.requests: list[str] = []
        self.context.on("request", lambda r: self.requests.append(r.url))
        self.context.on("websocket", lambda ws: self.requests.append(ws.url))
        self.page = self.context.new_page()
        self.page.set_default_timeout(30_000)

    def outside(self) -> list[str]:
        """Requests to anywhere but this service on 127.0.0.1."""
        ours = (self.service.url, self.service.url.replace("http://", "ws://"))
        return [u for u in self.requests if not u.startswith(ours) and not u.startswith("data:")]

    def shot(self, name: str) -> None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def visit(browser: Browser, page_service: Service) -> Iterator[Visit]:
    v = Visit(browser, page_service)
    try:
        yield v
        assert v.outside() == [], f"the page asked for outside addresses: {v.outside()}"
    finally:
        v.close()


@pytest.fixture(scope="session")
def model_server(live_model_server: str) -> str:
    """The page's tests watch runs while they are in flight (frames drawn as they come, an agent
    killed mid-run): here every answer takes the model's time, none comes from the memo."""
    return live_model_server


@pytest.fixture(scope="module")
def page_service(
    model_server: str, live_agents: tuple[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Service]:
    svc = Service(tmp_path_factory.mktemp("page") / "state", model_server, live_agents)
    svc.start()
    try:
        yield svc
    finally:
        svc.stop()


@pytest.fixture(scope="module")
def paced_service(
    paced_agents: tuple[str, Path], recorded: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Service]:
    """A service on agents replaying the recorded runs at their recorded pace: a run of a bundled
    task lasts as the live model made it (watched in flight, cancelled while it runs), and no
    model computes: for the tests whose subject is the page, not the model."""
    svc = Service(tmp_path_factory.mktemp("paced") / "state", "", paced_agents, **replayed(recorded, "recorded"))
    svc.start()
    try:
        yield svc
    finally:
        svc.stop()
