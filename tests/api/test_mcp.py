"""The whole mesh as one MCP server on the service (``/mcp``), used by the official ``mcp``
client as any MCP host would: a plain-text question about a document it sends is answered by
an ordinary run of the mesh, followed through progress notifications, and named in the reply."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent

from gaiamesh.tasks import load_task
from gaiamesh.tasks.answers import normalize

from ..conftest import TASKS
from .conftest import KEY, Service

pytestmark = [pytest.mark.e2e, pytest.mark.model]

TASK = "glass-museum"  # a bundled task the pipeline answers exactly


def text(result: CallToolResult) -> str:
    return "\n".join(item.text for item in result.content if isinstance(item, TextContent))


async def session_calls(url: str, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[str], list[Any], list[str]]:
    """One MCP session as a host opens it (the bearer header on the client): the tools listed,
    each call's result (or the MCPError it raised), and the progress messages that arrived."""
    progress: list[str] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    results: list[Any] = []
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {KEY}"}, timeout=httpx2.Timeout(30, read=300)) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        tools = [tool.name for tool in (await session.list_tools()).tools]
        for name, arguments in calls:
            try:
                results.append(await session.call_tool(name, arguments, progress_callback=on_progress))
            except MCPError as exc:
                results.append(exc)
    return tools, results, progress


def test_an_mcp_host_asks_the_mesh_about_a_document(service: Service) -> None:
    task = load_task(TASKS / TASK)
    tools, results, progress = asyncio.run(session_calls(f"{service.url}/mcp", [
        ("ask", {"document": task.doc, "question": task.question}),
        ("ask", {"document": "  \n", "question": task.question}),
        ("ask", {"document": "x" * 4001, "question": task.question}),
        ("no_such_tool", {}),
        ("list_tasks", {}),
        ("run_task", {"name": TASK}),
    ]))  # fmt: skip
    assert sorted(tools) == ["ask", "list_tasks", "run_task"]
    answered, empty, large, unknown, listed, ran = results
    assert isinstance(answered, CallToolResult) and not answered.is_error, text(answered)
    reply = text(answered)
    assert normalize(reply.splitlines()[0]) == normalize(task.answer), reply
    run_id = re.search(r"run ([0-9a-f]{16})", reply).group(1)  # type: ignore[union-attr]
    view = service.http.get(f"/api/runs/{run_id}").json()  # an ordinary run: the API knows it, finished
    assert view["state"] == "finished" and view["metrics"]["status"] == "ok" and view["task_id"] == "document"
    assert service.http.get(f"/api/runs/{run_id}/artifacts").status_code == 200
    assert f"/api/runs/{run_id}" in reply and answered.structured_content["run_id"] == run_id  # type: ignore[index]
    # progress notifications came as the run's events did: its states and its frames
    assert progress[0] == f"run {run_id}: queued" and f"run {run_id}: finished" in progress, progress
    assert any("doc_init" in p for p in progress), progress
    # bad input: MCP's own error shapes, in words a person can act on
    assert empty.is_error and "the document is empty" in text(empty)
    assert large.is_error and "MAX_DOC_BYTES is 4000" in text(large)
    assert isinstance(unknown, CallToolResult) and unknown.is_error and "Unknown tool: no_such_tool" in text(unknown)
    # the bundled tasks, and one run by name: scored against its gold
    assert f"{TASK}: {task.question}" in text(listed).splitlines()
    assert not ran.is_error and f"gold: {task.answer} (exact match 1)" in text(ran), text(ran)
    assert service.http.get(f"/api/runs/{ran.structured_content['run_id']}").json()["task_id"] == TASK


def test_the_endpoint_wants_the_access_key(service: Service) -> None:
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    accept = {"Accept": "application/json, text/event-stream"}
    for path in ("/mcp", "/mcp/"):
        bare = httpx.post(f"{service.url}{path}", json=initialize, headers=accept)
        assert bare.status_code == 401 and "no credentials" in bare.json()["detail"], bare.text
        assert bare.headers["www-authenticate"] == "Bearer"
        wrong = httpx.post(f"{service.url}{path}", json=initialize, headers={**accept, "Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and "not an access key" in wrong.json()["detail"]
    # a malformed JSON-RPC body past the key: the SDK's parse error, not a 500
    broken = httpx.post(f"{service.url}/mcp/", content=b"{not json", headers={**accept, "Authorization": f"Bearer {KEY}",
                                                                         "Content-Type": "application/json"})  # fmt: skip
    assert broken.status_code == 400 and broken.json()["error"]["code"] == -32700, broken.text
