"""Real Chromium (Debian's package, driven by Playwright through ``executable_path``; never
``playwright install``) on the real service, the real agents and the real model."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Playwright, sync_playwright

from ..api.conftest import Service
from ..conftest import ROOT

SHOTS = ROOT / "build" / "screenshots"  # the README's screenshots are copied from here


def chromium_path() -> str:
    """Debian's Chromium binary (``make setup`` installs the package where it is missing)."""
    for candidate in (os.environ.get("CHROMIUM"), "/usr/lib/chromium/chromium", shutil.which("chromium")):
        if candidate and Path(candidate).is_file():
            return candidate
    raise RuntimeError("Chromium is not installed: run `make setup` (it runs apt-get install chromium)")


# Module scope: Playwright's sync API runs its own event loop while it is open, and the asyncio
# tests that run later in the same process need the thread to themselves.
@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    args = ["--no-sandbox"] if os.geteuid() == 0 else []  # Chromium's sandbox refuses to run as root
    b = playwright.chromium.launch(executable_path=chromium_path(), args=args, headless=True)
    try:
        yield b
    finally:
        b.close()


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


@pytest.fixture(scope="module")
def page_service(
    model_server: str, agents: tuple[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Service]:
    svc = Service(tmp_path_factory.mktemp("page") / "state", model_server, agents)
    svc.start()
    try:
        yield svc
    finally:
        svc.stop()
