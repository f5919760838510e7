"""Run inside the stack's network container (``python - AGENT_URL < this file``): the A2A, MCP
and ACP SDKs' own clients, as their users call an agent, each send the search agent a document
and a question and print its answer (one JSON line per SDK). Only the packet is ours."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import httpx
from a2a import types as a2a_types
from a2a.client import ClientConfig, create_client
from a2a.helpers import get_data_parts, new_data_part

from gaiamesh.mesh.frames import doc_init

DOC = (
    "The Lindqvist Observatory stands on Mount Harnek at 2,340 metres. It was opened in 1968 and its "
    "main telescope has a mirror 2.1 metres across. The observatory is run by the University of Tarnby."
)
QUESTION = "When was the Lindqvist Observatory opened?"


def packet(run: str) -> dict[str, Any]:
    return doc_init(run, DOC, QUESTION).to_dict()


async def a2a(base: str) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(timeout=300) as http:
        client = await create_client(f"{base}/a2a", ClientConfig(streaming=False, httpx_client=http))
        message = a2a_types.Message(message_id="sdk-a2a", role=a2a_types.Role.ROLE_USER,
                                    parts=[new_data_part(packet("sdk-a2a"))], context_id="sdk-a2a")  # fmt: skip
        frames: list[dict[str, Any]] = []
        async for response in client.send_message(a2a_types.SendMessageRequest(message=message)):
            # an A2A answer is a Message or a Task: an agent answers a frame with a Message
            if response.HasField("message"):
                frames += get_data_parts(response.message.parts)
            elif response.HasField("task"):
                frames += [d for a in response.task.artifacts for d in get_data_parts(a.parts)]
        await client.close()
    return frames


async def mcp_call(base: str) -> list[dict[str, Any]]:
    import mcp

    async with mcp.Client(f"{base}/mcp/") as user:
        (tool,) = (await user.list_tools()).tools
        result = await user.call_tool(tool.name, {"packet": packet("sdk-mcp")})
    return [json.loads(item.text) for item in result.content if isinstance(item, mcp.types.TextContent)]


async def acp(base: str) -> list[dict[str, Any]]:
    from acp_sdk.client import Client
    from acp_sdk.models import Message, MessagePart

    part = MessagePart(content_type="application/json", content=json.dumps(packet("sdk-acp")))
    # acp-sdk 1.0.3's client sends no Content-Type, which current FastAPI refuses: its users add it.
    async with Client(base_url=f"{base}/acp", headers={"Content-Type": "application/json"}, timeout=300) as sdk:
        (agent,) = [a async for a in sdk.agents()]
        run = await sdk.run_sync(Message(parts=[part]), agent=agent.name)
    return [json.loads(p.content or "") for m in run.output for p in m.parts]


# --- a text request: the document and the query as text, passages as text back ----------------
async def a2a_text(base: str) -> list[str]:
    from a2a.helpers import new_text_part

    async with httpx.AsyncClient(timeout=300) as http:
        client = await create_client(f"{base}/a2a", ClientConfig(streaming=False, httpx_client=http))
        message = a2a_types.Message(message_id="sdk-a2a-text", role=a2a_types.Role.ROLE_USER,
                                    parts=[new_text_part(DOC), new_text_part(QUESTION)])  # fmt: skip
        texts: list[str] = []
        async for response in client.send_message(a2a_types.SendMessageRequest(message=message)):
            if response.HasField("task"):
                texts += [p.text for a in response.task.artifacts for p in a.parts]
        await client.close()
    return texts


async def mcp_text(base: str) -> list[str]:
    import mcp

    async with mcp.Client(f"{base}/mcp/") as user:
        (tool,) = (await user.list_tools()).tools
        result = await user.call_tool(tool.name, {"query": QUESTION, "document": DOC})
    return [item.text for item in result.content if isinstance(item, mcp.types.TextContent)]


async def acp_text(base: str) -> list[str]:
    from acp_sdk.client import Client

    async with Client(base_url=f"{base}/acp", timeout=300) as sdk:  # as shipped: no extra header
        (agent,) = [a async for a in sdk.agents()]
        run = await sdk.run_sync([DOC, QUESTION], agent=agent.name)
    return [p.content or "" for m in run.output for p in m.parts]


async def main(base: str) -> None:
    calls = (("a2a", a2a, a2a_text), ("mcp", mcp_call, mcp_text), ("acp", acp, acp_text))
    for name, call, text in calls:
        print(json.dumps({"sdk": name, "frames": await call(base), "texts": await text(base)}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
