"""The whole mesh as one MCP server on the service, at ``/mcp`` (streamable HTTP, the official
``mcp`` SDK): a tool ``ask`` (a document and a question, as text), ``list_tasks`` and
``run_task`` (the bundled tasks). Each call is an ordinary run, submitted as ``POST /api/runs``
submits one (its run id, ``metrics.json``, archive, a row on the page), followed to its end
with an MCP progress notification per live event, and answered with the run's answer and id.

Only the access key opens it, as ``Authorization: Bearer <key>`` (or ``?key=``), checked before
the SDK sees the request; the login cookie does not act here. That key is also why the SDK's
DNS-rebinding check (a Host allow-list) is off: the service is reached by whatever name the
deployment gives it, and a page that rebinds a name to it has no key to send."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, TransportSecuritySettings
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field
from starlette.requests import HTTPConnection, Request
from starlette.types import Receive, Scope, Send

from ..tasks import TaskError, bundled_names, load_task
from .models import RunView
from .standard import ADMIN, BadAsk, OnService, follow, outcome, refusal, refused_response, submit

PATH = "/mcp"
INSTRUCTIONS = (
    "Gaia Mesh answers a question about a document with its team of agents (the service's "
    "strategy, protocol and transport). Each call is one run of the mesh; the reply names it."
)

ASK = (
    "Ask Gaia Mesh a question about a document you give as plain text. The mesh's agents read it "
    "and answer from it alone; the reply is the answer, then the run that found it (its id, and "
    "the service's URLs of its metrics and archive). A run takes seconds to minutes: progress "
    "notifications follow it (its state, each frame between the agents)."
)
LIST = "The bundled tasks of this service: each one's name and question (run one with run_task)."
RUN_TASK = (
    "Run one bundled task by name (see list_tasks): its document and question through the mesh. "
    "The reply is the answer, the task's gold answer and whether it matched, and the run."
)

Document = Annotated[str, Field(description="the text to ask about (plain text, up to the service's MAX_DOC_BYTES)")]
Question = Annotated[str, Field(description="the question, answered from the document alone")]
TaskName = Annotated[str, Field(description="a bundled task's name, as list_tasks gives it (e.g. solar-farm)")]


class MeshTools(OnService):
    """The tools, over the service the app runs (``app.state.service``, built when it starts)."""

    async def ask(self, document: Document, question: Question, ctx: Context) -> CallToolResult:
        return await self._run({"document": document, "question": question}, ctx)

    async def run_task(self, name: TaskName, ctx: Context) -> CallToolResult:
        # Checked here first: the API's own refusal names the tasks folder, a path of the service's.
        if name not in bundled_names(self.service.settings.tasks_dir):
            raise ToolError(f"no bundled task named {name!r}: list_tasks names them")
        return await self._run({"task": name}, ctx)

    def list_tasks(self) -> CallToolResult:
        root = Path(self.service.settings.tasks_dir)
        listed = []
        for name in bundled_names(root):
            with contextlib.suppress(TaskError):  # a broken folder is run_task's to explain
                listed.append({"name": name, "question": load_task(root / name).question})
        lines = [f"{t['name']}: {t['question']}" for t in listed] or ["no bundled tasks"]
        return CallToolResult(content=[_text("\n".join(lines))], structured_content={"tasks": listed})

    async def _run(self, fields: dict[str, str], ctx: Context) -> CallToolResult:
        """Submit the run as the API does, follow its events, and answer with how it ended."""
        try:
            view = await submit(self.service, fields)
        except BadAsk as exc:  # the API's own checks and refusals, in its words
            raise ToolError(str(exc)) from exc
        sent = 0
        async for said in follow(self.service, view.id):
            sent += 1
            await ctx.report_progress(sent, None, f"run {view.id}: {said}")
        return _reply(self.service.run_view(ADMIN, view.id), _base_url(ctx))


def _reply(view: RunView, base: str) -> CallToolResult:
    """The run's answer as text, with its id and where its metrics and archive are; a run that
    did not end ok is a tool error saying how it ended and why."""
    ended = outcome(view, base)
    return CallToolResult(content=[_text(ended.text)], is_error=not ended.ok, structured_content=ended.fields)


def _text(text: str) -> TextContent:
    return TextContent(type="text", text=text)


def _base_url(ctx: Context) -> str:
    """The address the caller reached the service by (for the run's URLs in the reply)."""
    request = ctx.request_context.request
    return str(request.base_url).rstrip("/") if isinstance(request, Request) else ""


def build(state: Any) -> MCPServer:
    """The MCP server of the mesh, its tools reading the service from the app's ``state``."""
    tools = MeshTools(state)
    server: MCPServer = MCPServer("gaiamesh", instructions=INSTRUCTIONS, log_level="WARNING")
    read_only = ToolAnnotations(read_only_hint=True)
    server.add_tool(tools.ask, name="ask", description=ASK, structured_output=False)
    server.add_tool(tools.list_tasks, name="list_tasks", description=LIST, structured_output=False,
                    annotations=read_only)  # fmt: skip
    server.add_tool(tools.run_task, name="run_task", description=RUN_TASK, structured_output=False)
    return server


class Endpoint:
    """``/mcp`` and ``/mcp/`` (no redirect between them): the access key checked, then the SDK's
    streamable HTTP session manager. An ASGI app, so the SDK streams its answers itself."""

    def __init__(self, server: MCPServer, max_doc_bytes: int) -> None:
        self.server = server
        self.max_doc_bytes = max_doc_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        conn = HTTPConnection(scope)
        refused = refusal(conn, conn.app.state.service, "MCP")
        if refused is not None:
            await refused_response(refused)(scope, receive, send)
            return
        await self.server.session_manager.handle_request(scope, receive, send)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The SDK's session manager, for one lifetime of the app (a manager runs once: each
        lifespan makes its own)."""
        # A body big enough for a document of MAX_DOC_BYTES, every byte escaped: one over it gets
        # the API's own words (TooLarge), not the SDK's bare 413.
        most = max(DEFAULT_MAX_REQUEST_BODY_SIZE, 6 * self.max_doc_bytes + 65_536)
        self.server.streamable_http_app(
            streamable_http_path=PATH,
            max_request_body_size=most,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        async with self.server.session_manager.run():
            yield


def mount(app: Any) -> Endpoint:
    """Serve the mesh's MCP server at ``/mcp`` and ``/mcp/`` of ``app``; the app's lifespan
    runs :meth:`Endpoint.running`."""
    endpoint = Endpoint(build(app.state), app.state.settings.max_doc_bytes)
    for path in (PATH, PATH + "/"):
        app.router.add_route(path, endpoint, include_in_schema=False)
    return endpoint
