"""The streams view in real Chromium over the real service and model: start a stream from the
form, watch its row turn done with its figures, open its page (summary, workers, items.csv)."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from ..api.conftest import KEY
from .conftest import Visit

pytestmark = [pytest.mark.e2e, pytest.mark.model]
STREAM = 600_000  # ms: two queries live, with the team's start-up, on two busy cores


def test_a_stream_started_from_the_page_is_listed_and_shown(visit: Visit) -> None:
    page, service = visit.page, visit.service
    page.goto(f"{service.url}/?key={KEY}")
    page.get_by_role("link", name="Streams").click()
    expect(page).to_have_url(f"{service.url}/streams")
    expect(page.get_by_text("No streams yet")).to_be_visible()
    expect(page.get_by_label("Task set")).to_have_value("protocolbench-top1000")
    page.get_by_label("Workers").fill("1")
    page.get_by_label("Limit (0: all items)").fill("2")
    page.get_by_role("button", name="Start stream").click()
    expect(page.locator("#streams-table tbody tr")).to_have_count(1)  # accepted (a refusal flashes instead)
    row = page.locator("#streams-table tbody tr").first
    expect(row).to_have_attribute("data-state", "done", timeout=STREAM)  # the table refreshes itself
    stream_id = row.get_attribute("data-stream")
    assert stream_id
    report = json.loads((service.state / "streams" / stream_id / "stream.json").read_text())
    summary = report["summary"]  # an empty answer is counted apart from an answer
    assert summary["answered"] + summary["empty"] == 2
    expect(row.locator('[data-label="answered / items"]')).to_have_text(f"{summary['answered']} / 2")
    expect(row.locator('[data-label="protocol"]')).to_have_text(report["protocol"])
    expect(row.locator('[data-label="items/min"]')).to_have_text(f"{report['summary']['items_per_min']:.1f}")
    latency = report["summary"]["latency"]
    expect(row.locator('[data-label="latency p50 / p95 (s)"]')).to_have_text(
        f"{latency['p50']:.2f} / {latency['p95']:.2f}"
    )
    visit.shot("page-streams")
    row.get_by_role("link", name=stream_id[:8]).click()
    expect(page).to_have_url(f"{service.url}/streams/{stream_id}")
    expect(page.locator("#stream-state")).to_have_text("done")
    expect(page.locator("#stream-summary")).to_contain_text(f"{summary['answered']} answered of 2 ({summary['empty']} empty, 0 failed)")
    workers = page.locator("#stream-workers tbody tr")
    expect(workers).to_have_count(1)
    expect(workers.first.locator("td")).to_have_text(["1", "2"])  # worker 1 answered both
    with page.expect_download() as download:
        page.get_by_role("link", name="Download items.csv").click()
    saved = download.value.path()
    assert saved.read_bytes() == (service.state / "streams" / stream_id / "items.csv").read_bytes()
