"""The whole mesh as one MCP server on the service (``/mcp``), used by the official ``mcp``
client as any MCP host would: a plain-text question about a document it sends is answered by
an ordinary run of the mesh, followed through progress notifications, and named in the reply."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from mcp.types import CallToolResult

from gaiamesh.tasks import load_task
from gaiamesh.tasks.answers import normalize

from ..conftest import TASKS
from ..standard_clients import mcp_session, mcp_text, run_id_in
from .conftest import KEY, Service

pytestmark = [pytest.mark.e2e, pytest.mark.model]

TASK = "glass-museum"  # a bundled task the pipeline answers exactly


def test_an_mcp_host_asks_the_mesh_about_a_document(service: Service) -> None:
    task = load_task(TASKS / TASK)
    tools, results, progress = asyncio.run(mcp_session(f"{service.url}/mcp", KEY, [
        ("ask", {"document": task.doc, "question": task.question}),
        ("ask", {"document": "  \n", "question": task.question}),
        ("ask", {"document": "x" * 4001, "question": task.question}),
        ("no_such_tool", {}),
        ("list_tasks", {}),
        ("run_task", {"name": TASK}),
    ]))  # fmt: skip
    assert sorted(tools) == ["ask", "list_tasks", "run_task"]
    answered, empty, large, unknown, listed, ran = results
    assert isinstance(answered, CallToolResult) and not answered.is_error, mcp_text(answered)
    reply = mcp_text(answered)
    assert normalize(reply.splitlines()[0]) == normalize(task.answer), reply
    run_id = run_id_in(reply)
    view = service.http.get(f"/api/runs/{run_id}").json()  # an ordinary run: the API knows it, finished
    assert view["state"] == "finished" and view["metrics"]["status"] == "ok" and view["task_id"] == "document"
    assert service.http.get(f"/api/runs/{run_id}/artifacts").status_code == 200
    assert f"/api/runs/{run_id}" in reply and answered.structured_content["run_id"] == run_id  # type: ignore[index]
    # progress notifications came as the run's events did: its states and its frames
    assert progress[0] == f"run {run_id}: queued" and f"run {run_id}: finished" in progress, progress
    assert any("doc_init" in p for p in progress), progress
    # bad input: MCP's own error shapes, in words a person can act on
    assert empty.is_error and "the document is empty" in mcp_text(empty)
    assert large.is_error and "MAX_DOC_BYTES is 4000" in mcp_text(large)
    assert (
        isinstance(unknown, CallToolResult)
        and unknown.is_error
        and "Unknown tool: no_such_tool" in mcp_text(unknown)
    )
    # the bundled tasks, and one run by name: scored against its gold
    assert f"{TASK}: {task.question}" in mcp_text(listed).splitlines()
    assert not ran.is_error and f"gold: {task.answer} (exact match 1)" in mcp_text(ran), mcp_text(ran)
    assert service.http.get(f"/api/runs/{ran.structured_content['run_id']}").json()["task_id"] == TASK


def test_the_endpoint_wants_the_access_key(service: Service) -> None:
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    accept = {"Accept": "application/json, text/event-stream"}
    for path in ("/mcp", "/mcp/"):
        bare = httpx.post(f"{service.url}{path}", json=initialize, headers=accept)
        assert bare.status_code == 401 and "no credentials" in bare.json()["detail"], bare.text
        assert bare.headers["www-authenticate"] == "Bearer"
        wrong = httpx.post(
            f"{service.url}{path}", json=initialize, headers={**accept, "Authorization": "Bearer nope"}
        )
        assert wrong.status_code == 401 and "not an access key" in wrong.json()["detail"]
    # a malformed JSON-RPC body past the key: the SDK's parse error, not a 500
    broken = httpx.post(f"{service.url}/mcp/", content=b"{not json", headers={**accept, "Authorization": f"Bearer {KEY}",
                                                                         "Content-Type": "application/json"})  # fmt: skip
    assert broken.status_code == 400 and broken.json()["error"]["code"] == -32700, broken.text
