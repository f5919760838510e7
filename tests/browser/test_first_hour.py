"""The page as a new user found it (issue 31, item 10), in real Chromium over the real service,
agents and model: a run that timed out shows how it ended (not a green `finished`), a run with
no right answer shows no score and leaves the quality chart alone, the frames table fits a
phone with its last row in view, and no page asks for anything that answers 4xx (the favicon)."""

from __future__ import annotations

import statistics

import httpx
import pytest
from playwright.sync_api import Browser, expect

from ..api.conftest import KEY, Service
from ..conftest import TASKS
from .conftest import Visit
from .test_page import log_in

pytestmark = [pytest.mark.e2e, pytest.mark.model]


def finished(service: Service, body: dict[str, object]) -> dict[str, object]:
    """Start a run through the API and wait for its end (its event stream closes)."""
    r = service.http.post("/api/runs", json=body)
    assert r.status_code == 202, r.text
    run_id = r.json()["id"]
    service.events(run_id)
    view: dict[str, object] = service.http.get(f"/api/runs/{run_id}").json()
    return view


def test_a_timed_out_run_an_unscored_run_a_phone_and_no_404(browser: Browser, page_service: Service) -> None:
    late = finished(page_service, {"task": "solar-farm", "run_timeout": 0.5})
    assert late["state"] == "finished" and late["metrics"]["status"] == "timeout"  # type: ignore[index]
    doc = (TASKS / "glass-museum" / "doc.txt").read_text()
    unscored = finished(page_service, {"document": doc, "question": "Who founded the museum?"})
    assert unscored["metrics"]["quality_score"] is None  # type: ignore[index]
    v = Visit(browser, page_service)
    failures: list[str] = []
    v.context.on("response", lambda r: failures.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    try:
        page = v.page
        log_in(page, page_service)
        page.goto(f"{page_service.url}/runs")
        row = page.locator(f"tr[data-run='{late['id']}']")
        expect(row.locator(".state")).to_have_count(1)  # one badge, saying how the run ended
        expect(row.locator(".state")).to_have_text("timeout")
        expect(row.locator(".state")).to_have_class("state state-failed")
        cells = page.locator(f"tr[data-run='{unscored['id']}'] td")
        expect(cells.nth(5)).to_have_text("–")  # quality
        expect(cells.nth(6)).to_have_text("–")  # EM
        # the comparison's quality is the mean of the scored runs only (an unscored one is not a 0)
        compare = page.evaluate("fetch('/ui/compare').then(r => r.json())")
        runs = [r["metrics"] for r in page_service.http.get("/api/runs").json()
                if r["state"] == "finished" and r["metrics"] and r["metrics"]["status"] == "ok"
                and r["metrics"]["strategy"] == "pipeline" and r["metrics"]["protocol"] == "json"]  # fmt: skip
        scored = [m["quality_score"] for m in runs if m["quality_score"] is not None]
        group = compare["labels"].index("pipeline · json")
        assert compare["quality"][group] == (round(statistics.fmean(scored), 4) if scored else None)
        v.shot("page-runs-timeout-unscored")
        page.goto(f"{page_service.url}/runs/{late['id']}")
        expect(page.locator(".run-state")).to_contain_text("timeout")
        expect(page.locator(".run-state")).to_have_class("run-state error")
        page.goto(f"{page_service.url}/runs/{unscored['id']}")
        expect(page.locator(".mesh-answer")).to_contain_text("not scored")
        icon = page.locator("link[rel=icon]").get_attribute("href")
        assert icon and page.request.get(page_service.url + icon).ok
        assert httpx.get(f"{page_service.url}/favicon.ico").status_code == 200
        assert failures == [], failures
    finally:
        v.close()

    phone = Visit(browser, page_service, width=390, height=844)
    try:
        page = phone.page
        page.goto(f"{page_service.url}/?key={KEY}")
        page.goto(f"{page_service.url}/runs/{unscored['id']}")
        rows = page.locator(".mesh-frames tbody tr")
        expect(rows).to_have_count(len(unscored["metrics"]["agents"]) + 1)  # type: ignore[index,arg-type]
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        box = page.locator(".mesh-frames .scroll")
        table = page.locator("table.frames")
        right = box.evaluate("b => b.getBoundingClientRect().right")
        assert table.evaluate("t => t.getBoundingClientRect().right") <= right + 1  # not cut on the right
        rows.last.scroll_into_view_if_needed()
        last = rows.last.bounding_box()
        frame = box.bounding_box()
        assert last and frame and last["y"] + last["height"] <= frame["y"] + frame["height"] + 1  # the last row is in view
        expect(page.locator("table.frames thead th").first).to_be_visible()
        phone.shot("page-phone-frames")
        assert phone.outside() == []
    finally:
        phone.close()
