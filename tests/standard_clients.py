"""The three standard clients an outside user points at the service's mesh endpoints, each used as
its own documentation shows, with the service's access key as a bearer header: the official ``mcp``
client (``ClientSession`` over ``streamable_http_client``), a2a-sdk's ``create_client`` and
acp-sdk's ``Client``. Shared by the API suite (the service on loopback), the compose suite (the
stack ``make up`` starts) and the swarm suite (a deployed stack)."""

from __future__ import annotations

import re
import uuid
from typing import Any

import httpx
import httpx2
from a2a import types as a2a_types
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.helpers import get_artifact_text, new_text_part
from acp_sdk.client import Client as AcpClient
from acp_sdk.models import Event, Run
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent

READ_S = 300  # a run's answer comes when the run ends


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def run_id_in(text: str) -> str:
    """The run a reply names (``run <16 hex digits>``)."""
    return re.search(r"run ([0-9a-f]{16})", text).group(1)  # type: ignore[union-attr]


def mcp_text(result: CallToolResult) -> str:
    return "\n".join(item.text for item in result.content if isinstance(item, TextContent))


async def mcp_session(
    url: str, key: str, calls: list[tuple[str, dict[str, Any]]]
) -> tuple[list[str], list[Any], list[str]]:
    """One MCP session as a host opens it: the tools listed, each call's result (or the MCPError
    it raised), and the progress messages that arrived."""
    progress: list[str] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    results: list[Any] = []
    async with (
        httpx2.AsyncClient(headers=bearer(key), timeout=httpx2.Timeout(30, read=READ_S)) as http,
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


async def a2a_send(
    url: str, key: str, *texts: str, stream: bool = True
) -> tuple[a2a_types.AgentCard, list[a2a_types.StreamResponse]]:
    """The agent's card, and every response to one message of text parts (or the A2AError):
    its card by a2a-sdk's resolver, then ``create_client``, as its README shows."""
    async with httpx.AsyncClient(headers=bearer(key), timeout=httpx.Timeout(30, read=READ_S)) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        client = await create_client(card, ClientConfig(httpx_client=http, streaming=stream))
        message = a2a_types.Message(message_id=str(uuid.uuid4()), role=a2a_types.Role.ROLE_USER,
                                    parts=[new_text_part(t) for t in texts])  # fmt: skip
        try:
            return card, [r async for r in client.send_message(a2a_types.SendMessageRequest(message=message))]
        finally:
            await client.close()


def a2a_answers(responses: list[a2a_types.StreamResponse]) -> list[str]:
    """The answer artifacts' texts, streamed or in the finished task."""
    streamed = [
        get_artifact_text(r.artifact_update.artifact) for r in responses if r.HasField("artifact_update")
    ]
    done = [get_artifact_text(a) for r in responses if r.HasField("task") for a in r.task.artifacts]
    return streamed or done


async def acp_run(url: str, key: str, document: str, question: str) -> tuple[list[str], Run, list[Event]]:
    """acp-sdk's ``Client``: the agents listed, one synchronous run of two text parts, its events."""
    async with AcpClient(base_url=url, headers=bearer(key), timeout=READ_S) as client:
        agents = [agent.name async for agent in client.agents()]
        run = await client.run_sync([document, question], agent="gaia-mesh")
        events = [event async for event in client.run_events(run_id=run.run_id)]
    return agents, run, events


async def ask_everywhere(base: str, key: str, document: str, question: str) -> dict[str, str]:
    """The same plain-text question about ``document`` through each standard endpoint of the
    service at ``base``: each client's reply text, by protocol."""
    _, (answered,), _ = await mcp_session(
        f"{base}/mcp/", key, [("ask", {"document": document, "question": question})]
    )
    _, responses = await a2a_send(f"{base}/a2a", key, document, question)
    _, run, _ = await acp_run(f"{base}/acp", key, document, question)
    return {
        "mcp": mcp_text(answered) if isinstance(answered, CallToolResult) else repr(answered),
        "a2a": "\n".join(a2a_answers(responses)),
        "acp": str(run.output[0].parts[0].content) if run.output else repr(run.error),
    }
