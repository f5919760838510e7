"""What the mesh's standard endpoints share (``service/standard.py``), by plain calls: a
document and its question read from a message's parts, a run's events as progress lines, how a
run ended said with its id and URLs, and the service's address as a mounted app's caller sees it."""

from __future__ import annotations

from typing import Any

import pytest

from gaiamesh.errors import RunStatus
from gaiamesh.evaluation.metrics import RunMetrics
from gaiamesh.service.models import FrameEvent, RunState, RunView, StateEvent
from gaiamesh.service.standard import BadAsk, decoded, document_and_question, outcome, progress, service_url


def test_the_last_text_is_the_question_and_what_comes_before_the_document() -> None:
    assert document_and_question(["The museum was founded in 1901.", " When? "], []) == (
        "The museum was founded in 1901.", "When?")  # fmt: skip
    assert document_and_question(["Part one.", "Part two.", "Which part?"], []) == ("Part one.\n\nPart two.", "Which part?")
    assert document_and_question(["Which file?"], ["a file's text"]) == ("a file's text", "Which file?")
    # one text: the document, then the question on its last line
    assert document_and_question(["Line one.\nLine two.\nWhat is line two?\n\n"], []) == (
        "Line one.\nLine two.", "What is line two?")  # fmt: skip


@pytest.mark.parametrize(("texts", "files", "said"), [
    ([], [], "no question"),
    ([], ["a file"], "no question"),
    (["Only a question?"], [], "no document"),
])  # fmt: skip
def test_what_is_missing_is_said(texts: list[str], files: list[str], said: str) -> None:
    with pytest.raises(BadAsk, match=said):
        document_and_question(texts, files)


def test_a_file_is_read_as_utf8_text_only() -> None:
    assert decoded("Grüße".encode(), "text/plain", "a.txt") == "Grüße"
    assert decoded(b"plain", "", "") == "plain"
    with pytest.raises(BadAsk, match="the file 'a.pdf' is application/pdf: the mesh reads text"):
        decoded(b"%PDF", "application/pdf", "a.pdf")
    with pytest.raises(BadAsk, match="a file is not UTF-8 text"):
        decoded(b"\xff\xfe\xfa", "text/plain", "")


def test_progress_lines_follow_the_runs_events() -> None:
    assert progress(StateEvent(seq=0, state=RunState.QUEUED)) == "queued"
    frame = FrameEvent(seq=1, t_ms=1.0, src="0", dst=["1", "2"], type="search_docs", tag=None, bytes=10,
                       header_bytes=2, token_used=None, status="accepted", error=None)  # fmt: skip
    assert progress(frame) == "search_docs 0 -> 1, 2 (accepted)"


def view(metrics: RunMetrics | None, state: RunState = RunState.FINISHED) -> RunView:
    return RunView(id="0123456789abcdef", state=state, session_id=None, task_id="document", question="Who?",
                   created=0.0, strategy="pipeline", protocol="json", transport="relay", metrics=metrics)  # fmt: skip


def metrics(status: RunStatus, **fields: Any) -> RunMetrics:
    base = {"run_id": "0123456789abcdef", "task_id": "document", "question": "Who?", "answer": "", "status": status}
    return RunMetrics.model_construct(**{**base, **fields})


def test_an_outcome_names_the_run() -> None:
    ok = outcome(view(metrics(RunStatus.OK, prediction="Rupert Ashcombe")), "http://h:1")
    assert ok.ok and ok.text.splitlines()[0] == "Rupert Ashcombe" and ok.fields["run_id"] == "0123456789abcdef"
    assert ok.fields["archive"] == "http://h:1/api/runs/0123456789abcdef/artifacts" and "exact_match" not in ok.fields
    scored = outcome(view(metrics(RunStatus.OK, prediction="1901", answer="1901", exact_match=1, quality_score=1.0)), "")
    assert "gold: 1901 (exact match 1)" in scored.text and scored.fields["exact_match"] == 1
    failed = outcome(view(metrics(RunStatus.TIMEOUT, error="no answer within RUN_TIMEOUT")), "")
    assert not failed.ok and failed.text.startswith("the run ended timeout: no answer within RUN_TIMEOUT")
    assert "run 0123456789abcdef" in failed.text


def test_the_service_address_as_the_caller_reached_it() -> None:
    scope = {"type": "http", "scheme": "https", "path": "/a2a/", "root_path": "/proxy/a2a", "query_string": b"x=1",
             "headers": [(b"host", b"mesh.example:8443")], "server": ("127.0.0.1", 8080)}  # fmt: skip
    assert service_url(scope, "/a2a") == "https://mesh.example:8443/proxy"
    assert service_url({**scope, "root_path": "/a2a"}, "/a2a") == "https://mesh.example:8443"
