"""The page at a phone's 390 px and on a desktop, in real Chromium over the real service, agents
and model (issue 44): every column of the runs table can be reached (and stays reached while the
table refreshes), the frames table breaks lines between words only and its box shows the newest
frame and scrolls back to the first, the mesh drawing's labels are at least 9 px tall on a phone
and lie inside their circles (the orchestrated team's long names too); a native run's `layers`
reads as a table of its own inside a phone's screen (issue 60)."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from ..api.conftest import KEY, Service
from .conftest import Visit
from .test_first_hour import finished
from .test_page import (
    READ_CELL,
    orchestrated,  # noqa: F401  (the fixture: the orchestrated team and its service)
    same,
)

pytestmark = [pytest.mark.e2e, pytest.mark.model]

# Every word of every frames cell on one line: a word whose characters lie on two lines was broken.
BROKEN_WORDS = """table => {
  const broken = [];
  for (const cell of table.querySelectorAll("th, td")) {
    const text = cell.firstChild;
    if (!text || text.nodeType !== Node.TEXT_NODE) continue;
    let start = 0;
    for (const word of text.textContent.split(" ")) {
      const range = document.createRange();
      range.setStart(text, start);
      range.setEnd(text, start + word.length);
      const lines = new Set(Array.from(range.getClientRects()).filter(r => r.width > 0).map(r => Math.round(r.top)));
      if (lines.size > 1) broken.push(word);
      start += word.length + 1;
    }
  }
  return broken;
}"""

# Each agent's label lines, in screen pixels: their rendered font size, and how far the farthest
# corner of their box lies outside the agent's circle (0 or less: inside).
LABELS = """svg => Array.from(svg.querySelectorAll("g.agent")).flatMap(g => {
  const c = g.querySelector("circle").getBoundingClientRect();
  const cx = c.x + c.width / 2, cy = c.y + c.height / 2, r = c.width / 2;
  return Array.from(g.querySelectorAll("text.tool, text.node")).map(t => {
    const b = t.getBoundingClientRect();
    const far = Math.max(...[[b.left, b.top], [b.right, b.top], [b.left, b.bottom], [b.right, b.bottom]]
      .map(([x, y]) => Math.hypot(x - cx, y - cy)));
    const px = parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a;
    return { text: t.textContent, px, outside: far - r };
  });
})"""


@pytest.fixture(scope="module")
def page_service(paced_service: Service) -> Service:
    """Here the runs are of the recorded tasks, replayed at their recorded pace: what these tests
    read is the page's layout of a run, which the model's time only delays."""
    return paced_service


@pytest.fixture(scope="module")
def answered(page_service: Service) -> dict[str, Any]:
    """One whole run of a bundled task (its frames: doc_init, search_docs, events, ...)."""
    run = finished(page_service, {"task": "solar-farm", "run_timeout": 900})  # two cores, shared
    assert run["metrics"]["status"] == "ok", run  # type: ignore[index]
    return run


def phone(browser: Browser, service: Service, width: int = 390) -> Visit:
    v = Visit(browser, service, width=width, height=844)
    v.page.goto(f"{service.url}/?key={KEY}")
    expect(v.page).to_have_url(f"{service.url}/")
    return v


def labels(page: Page) -> list[dict[str, Any]]:
    expect(page.locator(".mesh-svg g.agent").first).to_be_visible()
    got: list[dict[str, Any]] = page.locator(".mesh-svg").evaluate(LABELS)
    assert got
    return got


def test_at_390_px_every_column_of_the_runs_table_is_in_the_screen(
    browser: Browser, page_service: Service, answered: dict[str, Any]
) -> None:
    v = phone(browser, page_service)
    try:
        page = v.page
        page.goto(f"{page_service.url}/runs")
        cells = page.locator(f"tr[data-run='{answered['id']}'] td")
        expect(cells).to_have_count(11)
        width = page.evaluate("window.innerWidth")
        for i in range(11):  # the state badge, answer, quality, bytes and archive cells too: on the
            box = cells.nth(i).bounding_box()  # screen as it is, with nothing scrolled sideways
            assert box and box["x"] >= 0 and box["x"] + box["width"] <= width, (i, box)
        badge = cells.locator(".state").bounding_box()
        assert badge and badge["x"] + badge["width"] <= width
        expect(cells.last.get_by_role("link", name="archive")).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        v.shot("page-phone-runs")
        assert v.outside() == []
    finally:
        v.close()


def test_at_390_px_a_native_runs_layers_read_down_the_screen(browser: Browser, page_service: Service) -> None:
    """``layers`` (a native run's wire below the packet) is a table of its own in the run's
    metrics, a row a count, every row inside a phone's screen: it was one line of "key: value"
    pairs that ran far past it (issue 60)."""
    run = finished(page_service, {"task": "solar-farm", "protocol": "json", "transport": "native", "run_timeout": 900})
    metrics: dict[str, Any] = run["metrics"]  # type: ignore[assignment]
    assert metrics["status"] == "ok" and metrics["layers"], run
    v = phone(browser, page_service)
    try:
        page = v.page
        page.goto(f"{page_service.url}/runs/{run['id']}")
        cell = page.locator("#metrics-table tr[data-key='layers'] > td")
        rows = cell.locator("table.nested tr")
        expect(rows).to_have_count(len(metrics["layers"]), timeout=30_000)
        assert same(cell.evaluate(READ_CELL), metrics["layers"])
        width = page.evaluate("window.innerWidth")
        for i in range(rows.count()):  # each count and its name on the screen as it is
            box = rows.nth(i).bounding_box()
            assert box and box["x"] >= 0 and box["x"] + box["width"] <= width, (i, box)
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        v.shot("page-phone-layers")
        assert v.outside() == []
    finally:
        v.close()


def test_a_wide_runs_table_keeps_its_scroll_while_it_refreshes(
    browser: Browser, page_service: Service, answered: dict[str, Any]
) -> None:
    v = phone(browser, page_service, width=700)  # one column of cards; the table wider than its box
    try:
        page = v.page
        page.goto(f"{page_service.url}/runs")
        box = page.locator("#runs .scroll")
        expect(box).to_be_visible()
        assert box.evaluate("b => b.scrollWidth > b.clientWidth")
        page.evaluate("window.swaps = 0; document.addEventListener('htmx:afterSwap', () => window.swaps++)")
        box.evaluate("b => { b.scrollLeft = b.scrollWidth; }")
        right = box.evaluate("b => b.scrollLeft")
        page.wait_for_function("window.swaps >= 2", timeout=15_000)  # refreshed (every 2 s) twice
        assert page.locator("#runs .scroll").evaluate("b => b.scrollLeft") == right > 0
        last = page.locator(f"tr[data-run='{answered['id']}'] td").last.bounding_box()
        frame = page.locator("#runs .scroll").bounding_box()
        assert last and frame and last["x"] + last["width"] <= frame["x"] + frame["width"] + 1
    finally:
        v.close()


def test_at_390_px_frames_keep_their_words_and_labels_are_legible(
    browser: Browser, page_service: Service, answered: dict[str, Any]
) -> None:
    v = phone(browser, page_service)
    try:
        page = v.page
        page.goto(f"{page_service.url}/runs/{answered['id']}")
        # the title says how the run ran: its team, its protocol and its wire
        expect(page.locator("#run-title")).to_contain_text(" · pipeline · json on the relay")
        rows = page.locator(".mesh-frames tbody tr")
        expect(rows).to_have_count(answered["metrics"]["frames"])
        table = page.locator("table.frames")
        assert table.evaluate(BROKEN_WORDS) == []  # "accepte/d", "search_doc/s" before
        assert table.evaluate("t => getComputedStyle(t.querySelector('td')).overflowWrap") != "anywhere"
        box = page.locator(".mesh-frames .scroll")
        right = box.evaluate("b => b.getBoundingClientRect().right")
        assert table.evaluate("t => t.getBoundingClientRect().right") <= right + 1  # not cut on the right
        # the newest frame in view; the box scrolls back to the first
        frame = box.bounding_box()
        newest = rows.last.bounding_box()
        assert frame and newest and newest["y"] + newest["height"] <= frame["y"] + frame["height"] + 1
        box.evaluate("b => { b.scrollTop = 0; }")
        first = rows.first.bounding_box()
        head = page.locator("table.frames thead").bounding_box()
        assert first and head and first["y"] >= head["y"] + head["height"] - 1 and first["y"] < frame["y"] + frame["height"]
        expect(rows.first.locator("td").first).to_have_text("1")
        small = [(x["text"], round(x["px"], 1)) for x in labels(page) if x["px"] < 9]
        assert small == [], small  # about 5.8 px before (a 640-unit drawing shrunk to 340 px)
        v.shot("page-phone-run")
        assert v.outside() == []
    finally:
        v.close()


def test_on_a_desktop_every_label_lies_inside_its_circle(
    browser: Browser, page_service: Service, orchestrated: Service, answered: dict[str, Any]  # noqa: F811
) -> None:
    # the orchestrated team's names ("orchestrator", "research") are the long ones: a run cut
    # short at once still shows its team
    cut = finished(orchestrated, {"task": "solar-farm", "strategy": "orchestrated", "run_timeout": 1})
    for service, run in ((orchestrated, cut), (page_service, answered)):
        for width in (1280, 390):
            v = Visit(browser, service, width=width, height=844)
            try:
                page = v.page
                page.goto(f"{service.url}/?key={KEY}")
                page.goto(f"{service.url}/runs/{run['id']}")
                spilled = [(x["text"], round(x["outside"], 1)) for x in labels(page) if x["outside"] > 0.5]
                assert spilled == [], (width, spilled)
                assert all(x["px"] >= 9 for x in labels(page))
                if service is orchestrated:
                    tools = page.locator(".mesh-svg text.tool").all_text_contents()
                    assert {"orchestrator", "research"} <= set(tools), tools
                    v.shot(f"page-orchestrated-labels-{width}")
            finally:
                v.close()
