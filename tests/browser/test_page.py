"""The live page in real Chromium over the real service, agents and model: log in, ask, watch
the frames travel, read the answer and the metrics, follow up, run a batch, lose an agent."""

from __future__ import annotations

import base64
import json
import re
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect
from websockets.sync.server import ServerConnection, serve

from gaiamesh.agents.teams import agent_specs
from gaiamesh.deploy.local import ProcessGroup, child_env
from gaiamesh.evaluation.metrics import read_log
from gaiamesh.settings import load_settings
from gaiamesh.tasks import load_task

from ..api.conftest import KEY, Service
from ..conftest import TASKS, dev_task, free_port_block, paced, replayed
from .conftest import Visit

pytestmark = [pytest.mark.e2e, pytest.mark.model]
PIPELINE = ["doc_init", "search_docs", "events", "triples", "data_event"]  # one stage after another
RUN = 180_000  # ms a run may take on two cores


def log_in(page: Page, service: Service) -> None:
    page.goto(f"{service.url}/?key={KEY}")
    expect(page).to_have_url(f"{service.url}/")  # the key is traded for the cookie and leaves the address


def start_session(page: Page, task: str) -> None:
    page.get_by_label("Bundled task").select_option(task)
    page.get_by_role("button", name="Start session").click()
    expect(page.locator("#session-state")).to_have_text("INIT")


def ask(page: Page, question: str, answer: str) -> None:
    page.get_by_label("Question", exact=True).fill(question)
    page.get_by_label("Right answer, if you know it (scores the run)").fill(answer)
    page.get_by_role("button", name="Ask").click()


def metrics_of(service: Service, run_id: str) -> dict[str, Any]:
    return json.loads((service.state / "runs" / run_id / "metrics.json").read_text())


def as_shown(value: object, nested: bool = False) -> str:
    """A value as the page writes it: a list joined with commas, a mapping as "key: value"
    pairs, nested ones in brackets and parentheses; JavaScript writes 1.0 as "1"."""
    if value is None:
        return "–"
    if isinstance(value, list):
        text = ", ".join(as_shown(v, True) for v in value)
        return f"[{text}]" if nested else text
    if isinstance(value, dict):
        text = ", ".join(f"{k}: {as_shown(v, True)}" for k, v in value.items())
        return f"({text})" if nested else text
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# A metrics table's cell as data: a table of its own as {field: cell}, a list of such tables as a
# list, any other cell as its text.
READ_CELL = """cell => {
  const read = c => {
    const table = c.querySelector(":scope > table.nested");
    if (table) return Object.fromEntries(Array.from(table.tBodies[0].rows).map(r => [r.dataset.field, read(r.cells[1])]));
    const list = c.querySelector(":scope > ol.nested");
    return list ? Array.from(list.children).map(read) : c.innerText;
  };
  return read(cell);
}"""


def same(shown: object, value: object) -> bool:
    """A value of metrics.json as the page shows it (read by READ_CELL): a mapping as a table of
    its own, a row a key in order, a list of mappings as a list of such tables, anything else as
    text (a list joined with commas, a number as JavaScript writes it)."""
    if isinstance(value, dict) and value:
        return isinstance(shown, dict) and list(shown) == list(value) and all(same(shown[k], v) for k, v in value.items())
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return isinstance(shown, list) and len(shown) == len(value) and all(map(same, shown, value))
    if isinstance(value, int | float) and not isinstance(value, bool):
        return isinstance(shown, str) and float(shown) == float(value)
    return shown == as_shown(value)


def test_without_the_key_the_page_shows_no_data(visit: Visit) -> None:
    page, url = visit.page, visit.service.url
    response = page.goto(f"{url}/runs")
    assert response is not None and response.status == 401
    expect(page.get_by_label("Access key")).to_be_visible()
    assert page.request.get(f"{url}/api/runs").status == 401
    assert page.request.get(f"{url}/ui/runs").status == 401
    closed = page.evaluate(
        """url => new Promise(done => { const ws = new WebSocket(url);
             ws.onopen = () => done("open"); ws.onclose = () => done("closed"); })""",
        url.replace("http", "ws") + "/api/runs/anything/events",
    )
    assert closed == "closed"
    page.goto(f"{url}/?key=not-the-key")
    expect(page.locator("#login-reason")).to_contain_text("not the access key")
    # typed into the form, the key logs in; the cookie is out of the page's scripts' reach
    page.get_by_label("Access key").fill(KEY)
    page.get_by_label("Access key").press("Enter")
    expect(page.get_by_role("heading", name="Sessions")).to_be_visible()
    cookie = next(c for c in visit.context.cookies() if c["name"] == "gaiamesh_login")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and KEY not in cookie["value"]
    assert page.evaluate("document.cookie") == ""


def test_ask_watch_the_frames_read_the_metrics_and_follow_up(visit: Visit) -> None:
    page, service = visit.page, visit.service
    turns = json.loads((TASKS / "mountain-town" / "conversation.json").read_text())["turns"]
    log_in(page, service)
    start_session(page, "mountain-town")
    # every frame row the view adds is noted with the run's state at that moment: live, not replayed
    page.evaluate(
        """() => { window.inserted = [];
             new MutationObserver(ms => ms.forEach(m => m.addedNodes.forEach(n => {
               if (n.tagName === "TR" && n.dataset.type !== undefined)
                 window.inserted.push([n.dataset.type, document.querySelector(".mesh").dataset.state || ""]);
             }))).observe(document.getElementById("mesh"), {childList: true, subtree: true}); }"""
    )
    ask(page, turns[2]["question"], turns[2]["answer"])

    rows = page.locator(".mesh-frames tbody tr")
    expect(rows.first).to_be_visible()  # frames show up while the run is still in flight
    assert page.locator(".mesh").get_attribute("data-state") in (None, "queued", "running")
    expect(rows.nth(1)).to_be_visible(timeout=RUN)  # the next stage may take a while on a loaded machine
    visit.shot("page-during-run")  # the picture of a run in flight (docs/page.md)
    expect(page.locator(".mesh[data-state='finished']")).to_be_attached(timeout=RUN)
    types: list[str] = rows.evaluate_all("rs => rs.map(r => r.dataset.type)")
    firsts = [types.index(t) for t in PIPELINE]
    assert firsts == sorted(firsts), types  # every pipeline stage spoke, in order
    inserted = page.evaluate("window.inserted")
    assert [t for t, _ in inserted] == types  # each row drawn once, as its frame came
    assert all(state != "finished" for _, state in inserted), inserted  # all before the run had ended

    run_id = page.locator("#mesh").get_attribute("data-run")
    assert run_id
    metrics = metrics_of(service, run_id)
    assert metrics["status"] == "ok" and rows.count() == metrics["frames"]
    expect(page.locator(".final-answer")).to_have_text(metrics["prediction"])
    expect(page.locator("#session-state")).to_have_text("STOP")
    expect(page.locator(".turn .answer-text").last).to_have_text(metrics["prediction"])
    expect(page.locator(".turn .quality").last).to_have_text(f"{metrics['quality_score']:.3f}")
    # per-agent counters drawn from the frames agree with the relay's
    for node, agent in metrics["agents"].items():
        g = page.locator(f".mesh-svg g.agent[data-node='{node}']")
        assert int(g.get_attribute("data-sent") or -1) == agent["pkts_sent"], node
        assert int(g.get_attribute("data-received") or -1) == agent["pkts_received"], node
    visit.shot("page-run")

    # the run's own page: metrics.json as a table, and its archive
    page.get_by_role("link", name=run_id[:8]).last.click()
    expect(page.locator("#metrics-table")).to_be_visible(timeout=RUN)
    for key, value in metrics.items():
        if key != "agents":
            shown = page.locator(f"#metrics-table tr[data-key='{key}'] > td").evaluate(READ_CELL)
            assert same(shown, value), (key, shown, value)
    expect(page.locator("#agents-table tbody tr")).to_have_count(len(metrics["agents"]))
    archive = page.request.get(f"{service.url}/api/runs/{run_id}/artifacts")
    assert archive.status == 200 and archive.body()[:2] == b"\x1f\x8b"

    # a follow-up question leans on the session's memory ("it" is the series asked about)
    page.go_back()
    ask(page, turns[3]["question"], turns[3]["answer"])
    expect(page.locator(".turn")).to_have_count(2)
    expect(page.locator(".turn").nth(1).locator(".answer-text")).to_have_text(turns[3]["answer"], timeout=RUN)
    expect(page.locator("#session-state")).to_have_text("STOP")


def test_a_batch_of_two_tasks_runs_one_after_the_other_and_is_compared(
    browser: Browser, paced_service: Service
) -> None:
    visit = Visit(browser, paced_service)
    try:
        _batch_and_cancel(visit)
        assert visit.outside() == [], f"the page asked for outside addresses: {visit.outside()}"
    finally:
        visit.close()


def _batch_and_cancel(visit: Visit) -> None:
    page, service = visit.page, visit.service
    log_in(page, service)
    page.get_by_role("link", name="Run & compare").click()
    before = set(page.locator("#runs-table tbody tr").evaluate_all("rs => rs.map(r => r.dataset.run)")) if page.locator(
        "#runs-table").count() else set()  # fmt: skip
    page.get_by_label("solar-farm").check()
    page.get_by_label("glass-museum").check()
    page.locator("#start-form select[name=protocol]").select_option("binary")
    page.get_by_role("button", name="Start", exact=True).click()
    page.wait_for_function(
        """before => { const rows = [...document.querySelectorAll('#runs-table tbody tr')]
                         .filter(r => !before.includes(r.dataset.run));
                       return rows.length === 2 && rows.every(r => r.dataset.state === 'finished'); }""",
        arg=sorted(before),
        timeout=2 * RUN,
    )
    new = [r for r in page.locator("#runs-table tbody tr").evaluate_all("rs => rs.map(r => r.dataset.run)")
           if r not in before]  # fmt: skip
    runs = [metrics_of(service, r) for r in new]
    assert sorted(m["task_id"] for m in runs) == ["glass-museum", "solar-farm"]
    assert all(m["protocol"] == "binary" and m["status"] == "ok" for m in runs)
    expect(page.locator("#compare-note")).to_contain_text("pipeline · binary")
    expect(page.locator("#start-note")).to_contain_text("Started a batch of 2 tasks")  # the page says what it did
    visit.shot("page-results")
    # a run cancelled from the table ends `cancelled`
    page.get_by_label("glass-museum").uncheck()
    page.get_by_role("button", name="Start", exact=True).click()
    row = page.locator("#runs-table tbody tr").first
    expect(row).to_have_attribute("data-state", re.compile("queued|running"))
    expect(page.locator("#start-note")).to_contain_text("Started run ")
    expect(page.locator("#start-note")).to_contain_text("solar-farm, pipeline · binary")
    expect(row.locator('[data-label="strategy · protocol"]')).to_have_text("pipeline · binary")  # before it ends
    row.get_by_role("button", name="Cancel").click()
    expect(page.locator("#runs-table tbody tr").first).to_have_attribute("data-state", "cancelled", timeout=RUN)


def test_api_errors_are_put_into_words(visit: Visit) -> None:
    page = visit.page
    log_in(page, visit.service)
    page.get_by_text("New session").click() if not page.locator("#new-session[open]").count() else None
    too_long = "word " * 60_000  # 300,000 bytes, past MAX_DOC_BYTES (262,144)
    page.get_by_label("or a document").fill(too_long)
    expect(page.locator("[data-size-for='document']")).to_contain_text("at most 262144 are accepted")
    page.get_by_role("button", name="Start session").click()
    flash = page.locator("#flash")
    expect(flash).to_contain_text("What went wrong: document is 300000 bytes; MAX_DOC_BYTES is 262144")
    expect(flash).to_contain_text("The document is too long")
    page.get_by_role("button", name="Dismiss").click()
    expect(flash).to_be_hidden()
    page.goto(f"{visit.service.url}/runs/no-such-run")
    expect(page.locator(".error")).to_contain_text("no run no-such-run")  # words, not a stack trace


def test_keyboard_alone_and_phone_width(browser: Browser, page_service: Service) -> None:
    phone = Visit(browser, page_service, width=390, height=844)
    try:
        page = phone.page
        page.goto(f"{page_service.url}/")
        page.keyboard.type(KEY)  # the key field has the focus
        page.keyboard.press("Enter")
        expect(page.get_by_role("heading", name="Sessions")).to_be_visible()
        for path in ["/", "/runs"]:
            page.goto(page_service.url + path)
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), path
        page.goto(page_service.url + "/")

        def tab_to(text: str) -> None:  # Tab through the page until ``text`` has the focus
            for _ in range(40):
                page.keyboard.press("Tab")
                if page.evaluate("document.activeElement.textContent.trim()").startswith(text):
                    return
            raise AssertionError(f"Tab never reached {text!r}")

        tab_to("New session")
        if not page.evaluate("document.getElementById('new-session').open"):  # open when no session exists
            page.keyboard.press("Enter")  # opens the form
        page.keyboard.press("Tab")  # the task picker
        page.keyboard.press("ArrowDown")  # the first bundled task
        assert page.get_by_label("Bundled task").input_value() != ""
        tab_to("Start session")
        page.keyboard.press("Enter")
        expect(page.locator("#session-state")).to_have_text("INIT")
        assert phone.outside() == []
    finally:
        phone.close()


@pytest.fixture(scope="module")
def wide(recorded: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Service, ProcessGroup]]:
    """The `wide` line-up (two agents per tool, work shared) and a service of its own, replaying
    the recorded solar-farm run at its recorded pace: the run lasts as the live model made it, so
    an agent can be killed in its middle, and no model computes."""
    tmp = tmp_path_factory.mktemp("wide")
    port = free_port_block(8)
    tools = ["search", "extract", "triple", "reason"] * 2
    line = ",".join(f"{i}={t}@127.0.0.1:{port + i}" for i, t in enumerate(tools))
    settings = load_settings(agents=line, workspace_root=tmp / "ws", **paced(recorded))
    group = ProcessGroup(tmp / "logs")
    group.start_team(settings)
    svc = Service(tmp / "state", "", (line, tmp / "ws"), ROUTING="share", **replayed(recorded, "recorded"))
    svc.start()
    try:
        yield svc, group
    finally:
        svc.stop()
        group.stop_all()


def test_a_killed_agent_is_greyed_out_and_the_run_still_finishes(
    browser: Browser, wide: tuple[Service, ProcessGroup]
) -> None:
    service, group = wide
    v = Visit(browser, service)
    try:
        page = v.page
        log_in(page, service)
        start_session(page, "solar-farm")
        expect(page.locator(".mesh-svg g.agent")).to_have_count(0)
        task = load_task(TASKS / "solar-farm")
        ask(page, task.question, task.answer)
        expect(page.locator(".mesh-svg g.agent")).to_have_count(8)
        expect(page.locator(".mesh-frames tbody tr").first).to_be_visible()
        group.procs["agent-6"].send_signal(signal.SIGKILL)  # a triple replica, mid-run
        lost = page.locator(".mesh-svg g.agent[data-node='6']")
        expect(lost).to_have_attribute("data-state", "lost", timeout=RUN)
        expect(page.locator(".mesh-notes li.error")).to_contain_text("agent 6 (triple) disconnected")
        expect(page.locator(".mesh[data-state='finished']")).to_be_attached(timeout=RUN)
        run_id = page.locator("#mesh").get_attribute("data-run")
        assert run_id
        metrics = metrics_of(service, run_id)
        assert metrics["status"] == "ok" and metrics["agents"]["6"]["status"] == "dead"
        expect(page.locator(".final-answer")).to_have_text(metrics["prediction"])
        assert page.locator(".mesh-svg g.agent[data-state='connected']").count() == 7
        expect(page.locator("#session-state")).to_have_text("STOP")
        v.shot("page-agent-lost")
        assert v.outside() == []
    finally:
        v.close()


@pytest.fixture(scope="module")
def orchestrated(model_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """The orchestrated team (orchestrator, research, utility) and a service of its own."""
    tmp = tmp_path_factory.mktemp("orchestrated")
    port = free_port_block(3)
    line = ",".join(f"{i}={t}@127.0.0.1:{port + i}" for i, t in enumerate(["orchestrator", "research", "utility"]))
    settings = load_settings(ollama_host=model_server, agents=line, workspace_root=tmp / "ws", strategy="orchestrated",
                             web_url="http://127.0.0.1:9")  # no web here: a web question fails and is revised
    group = ProcessGroup(tmp / "logs")
    group.start_team(settings)
    svc = Service(tmp / "state", model_server, (line, tmp / "ws"), STRATEGY="orchestrated",
                  SUBTASK_TIMEOUT="60")  # fmt: skip
    svc.start()
    try:
        yield svc
    finally:
        svc.stop()
        group.stop_all()


def test_a_pasted_document_with_the_orchestrated_plan_drawn_live(browser: Browser, orchestrated: Service) -> None:
    task = dev_task("arithmetic.jsonl#arithmetic", "lighthouse-keepers")
    v = Visit(browser, orchestrated)
    try:
        page = v.page
        log_in(page, orchestrated)
        page.get_by_label("or a document").fill(task.doc)
        expect(page.locator("[data-size-for='document']")).to_contain_text(f"{len(task.doc.encode())} of")
        page.locator("#new-session select[name=strategy]").select_option("orchestrated")
        page.get_by_role("button", name="Start session").click()
        expect(page.locator("#session-state")).to_have_text("INIT")
        ask(page, task.question, task.answer)
        steps = page.locator(".plan-svg g.step")
        expect(steps.first).to_be_visible(timeout=RUN)  # the plan is drawn while the run is in flight
        expect(page.locator(".mesh[data-state='finished']")).to_be_attached(timeout=RUN)
        run_id = page.locator("#mesh").get_attribute("data-run")
        assert run_id
        metrics = metrics_of(orchestrated, run_id)
        assert metrics["status"] == "ok" and metrics["strategy"] == "orchestrated"
        expect(page.locator(".final-answer")).to_have_text(metrics["prediction"])
        # the drawing is the plan the orchestrator journaled: its steps, their references, their states
        journal = [json.loads(x) for x in (orchestrated.state.parent / "ws" / "0" / run_id / "journal.jsonl").read_text().splitlines()]
        attempts = [e for e in journal if e["event"] == "attempt_started"]
        plan = attempts[-1]["plan"]
        ids = [s["stepId"] for stage in plan["stages"] for s in stage["steps"]]
        last = page.locator(".attempt").last
        assert last.locator("g.step").evaluate_all("gs => gs.map(g => g.dataset.step)") == ids
        refs = {(m[0], s["stepId"]) for stage in plan["stages"] for s in stage["steps"]
                for m in re.findall(r"@\{outputs\.(\w+)\.(result_data|processed_result_data)\}", json.dumps(s))}  # fmt: skip
        drawn = last.locator("path.ref").evaluate_all("ps => ps.map(p => [p.dataset.from, p.dataset.to])")
        assert {tuple(d) for d in drawn} == refs and refs  # a multi-stage plan, its references drawn
        done = {e["step"] for e in journal if e["event"] == "step_completed"}
        for sid in ids:
            expect(last.locator(f"g.step[data-step='{sid}']")).to_have_attribute(
                "data-state", "completed" if sid in done else "failed"
            )
        expect(page.locator(".journal-list li")).to_have_count(len(journal))
        # the finished run's journal reads from its first line, whole (not scrolled past its top)
        top = page.locator(".journal-list").bounding_box()
        first_line = page.locator(".journal-list li").first.bounding_box()
        assert top and first_line and first_line["y"] >= top["y"]
        expect(page.locator(".mesh-frames tbody tr[data-type='subtask']").first).to_be_visible()
        expect(page.locator("#session-state")).to_have_text("STOP")
        v.shot("page-orchestrated")

        # a web question with no web to reach: the search step fails, the plan is revised, and each
        # attempt is drawn as it happens (the last one answers from the document)
        ask(page, "Search the web for the year the lighthouse was automated", "1987")
        expect(page.locator("#mesh")).not_to_have_attribute("data-run", run_id)  # the view follows the new run
        expect(page.locator(".mesh[data-state='finished']")).to_be_attached(timeout=RUN)
        attempts = page.locator(".attempt")
        assert attempts.count() >= 2
        first = attempts.first
        expect(first).to_have_class(re.compile("superseded"))
        expect(first.locator("g.step[data-state='failed']")).to_have_count(1)
        expect(page.locator(".journal-list li[data-event='replan_started']").first).to_be_visible()
        v.shot("page-orchestrated-revised")
        assert v.outside() == []
    finally:
        v.close()


def recorded_passages(recorded: Path, task_id: str) -> dict[str, Any]:
    """The search agent's payload in the recorded pipeline run of ``task_id`` (under json, its
    bytes are the packet): passages the recorded extract, triple and reason calls were asked of."""
    for log in sorted(recorded.rglob("frames.jsonl")):
        metrics = log.parent / "metrics.json"
        if log.parent.name.startswith(task_id) and metrics.is_file() and "orchestrated" not in log.parts:
            first = next(r for r in read_log(log) if r.type == "search_docs")
            return dict(json.loads(base64.b64decode(first.b64))["payload"])
    raise AssertionError(f"no recorded pipeline run of {task_id} under {recorded}")


def naughty_search(passages: dict[str, Any]) -> Callable[[ServerConnection], None]:
    """A search agent that answers doc_init with four bad frames, then a good one (``passages``),
    so the run goes on with the real agents after it."""

    def handler(ws: ServerConnection) -> None:
        for message in ws:
            doc = json.loads(message)
            if doc.get("type") != "doc_init":
                continue
            good = {"type": "search_docs", "run_id": doc["run_id"], "src": "0", "seq": 1, "question": doc["question"],
                    "payload": passages}  # fmt: skip
            for bad in (b"{this is not json", json.dumps({**good, "type": "gossip"}).encode(),
                        json.dumps({**good, "src": "3"}).encode(), json.dumps({**good, "run_id": "old-run"}).encode()):  # fmt: skip
                ws.send(bad)
            ws.send(json.dumps(good).encode())

    return handler


def test_rejected_frames_are_marked_with_their_reason(
    browser: Browser, recorded: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # The real extract, triple and reason agents answer from the recording (the good frame
    # carries the recorded search's passages, so every call they make was recorded): the page's
    # marking of rejected frames is the subject, and no model computes.
    tmp = tmp_path_factory.mktemp("naughty")
    port = free_port_block(4)
    line = ",".join(f"{i}={t}@127.0.0.1:{port + i}" for i, t in enumerate(["search", "extract", "triple", "reason"]))
    settings = load_settings(agents=line, workspace_root=tmp / "ws", llm_backend="replay", replay_from=recorded)
    group = ProcessGroup(tmp / "logs")
    for spec in agent_specs(settings)[1:]:  # the real extract, triple and reason
        group.start(f"agent-{spec.node_id}", ["agent"],
                    child_env(settings, node_id=spec.node_id, tool=spec.tool, port=str(spec.port)))  # fmt: skip
    fake = serve(naughty_search(recorded_passages(recorded, "solar-farm")), "127.0.0.1", port, max_size=None)
    threading.Thread(target=fake.serve_forever, daemon=True).start()
    svc = Service(tmp / "state", "", (line, tmp / "ws"), **replayed(recorded))
    v = Visit(browser, svc)
    try:
        svc.start()
        page = v.page
        log_in(page, svc)
        start_session(page, "solar-farm")
        task = load_task(TASKS / "solar-farm")
        ask(page, task.question, task.answer)
        expect(page.locator(".mesh[data-state='finished']")).to_be_attached(timeout=RUN)
        rejected = page.locator(".mesh-frames tbody tr[data-status='rejected']")
        expect(rejected).to_have_count(4)
        expect(rejected.nth(0)).to_contain_text("malformed JSON")
        expect(rejected.nth(1)).to_contain_text("unknown packet type 'gossip'")
        expect(rejected.nth(2)).to_contain_text("claims src '3' but arrived from agent '0'")
        expect(rejected.nth(3)).to_contain_text("belongs to run 'old-run'")
        expect(page.locator(".mesh-notes li.error")).to_have_count(4)  # one note per rejection, in red
        run_id = page.locator("#mesh").get_attribute("data-run")
        assert run_id
        metrics = metrics_of(svc, run_id)
        assert metrics["status"] == "ok" and metrics["rejected_cnt"] == 4
        expect(page.locator(".final-answer")).to_have_text(metrics["prediction"])
        assert v.outside() == []
    finally:
        v.close()
        svc.stop()
        fake.shutdown()
        group.stop_all()
