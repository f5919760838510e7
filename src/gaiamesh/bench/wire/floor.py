"""The floor: each protocol's SDK alone, a minimal echo server and the SDK's own client used as
its documentation shows, nothing of ours in between (but the counting tap, as for ours).

Server side (``floor_app``), run by uvicorn with its defaults (its HTTP parser ``auto``, its 5 s
keep-alive, the app's lifespan run): json is a Starlette route that answers the body it got;
a2a an ``AgentExecutor`` that answers the data part in a ``Message``; mcp an ``MCPServer`` tool
that returns the packet's JSON as text; acp an ``acp-sdk`` ``Server`` agent that yields the
part it got; anp a ``FastANP`` echo interface behind the SDK's DID-WBA verifier
(``floor_anp.py``); agora the SDK's ``ReceiverServer`` on Flask's own server (``floor_agora.py``).
Client side (``floor_client``): one per peer, each on its own HTTP client as the
SDK makes it (timeouts raised to 60 s so that 64 peers on a busy machine do not time out:
no pool setting is changed). Where the SDK alone needs a workaround of ours to work at all,
it is named here: acp-sdk's client sends no ``Content-Type``, which the FastAPI it is served
with refuses, so the floor server takes the binding's :class:`JsonByDefault` too.

SDKs are imported inside the functions: a bench of json alone loads none of them.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
from starlette.types import ASGIApp

from . import FLOOR_PROTOCOLS as FLOOR_PROTOCOLS  # re-exported: the floors' protocols

Send = Callable[[bytes], Awaitable[int]]  # one request: the blob out, the answer's bytes back
TIMEOUT_S = 60.0
ECHO = "echo"  # the tool's, agent's and skill's name on both sides
MCP_PATH = "/mcp"  # the SDK's default streamable HTTP path
WSGI_FLOORS = frozenset({"agora"})  # served by their SDK's own WSGI server (floor_agora.py), not uvicorn


def floor_app(protocol: str, public_url: str) -> ASGIApp:
    """The SDK's minimal echo server for ``protocol``; ``public_url``: where its clients reach it
    (through the tap), for an A2A card's interface."""
    from .floor_anp import anp_app

    apps = {"json": _json_app, "a2a": _a2a_app, "acp": _acp_app, "mcp": _mcp_app, "anp": anp_app}
    made: ASGIApp = apps[protocol](public_url)
    return made


def floor_client(protocol: str, url: str, keys_dir: Path) -> Any:
    """An async context manager yielding a :data:`Send` through the SDK's own client; ``keys_dir``:
    the relay's identity, for a protocol that signs (anp)."""
    from .floor_agora import agora_client
    from .floor_anp import anp_client

    if protocol == "anp":
        return anp_client(url, keys_dir)
    clients = {"json": _json_client, "a2a": _a2a_client, "acp": _acp_client, "mcp": _mcp_client, "agora": agora_client}
    return clients[protocol](url)


# --- json: plain HTTP, httpx against Starlette ----------------------------------------------------
def _json_app(public_url: str) -> ASGIApp:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    async def echo(request: Request) -> Response:
        return Response(await request.body(), media_type="application/json")

    return Starlette(routes=[Route("/echo", echo, methods=["POST"])])


@asynccontextmanager
async def _json_client(url: str) -> AsyncIterator[Send]:
    async with httpx.AsyncClient(timeout=TIMEOUT_S) as http:

        async def send(blob: bytes) -> int:
            answer = await http.post(
                f"{url}/echo", content=blob, headers={"Content-Type": "application/json"}
            )
            answer.raise_for_status()
            return len(answer.content)

        yield send


# --- a2a: a2a-sdk's JSON-RPC routes and client ----------------------------------------------------
def _a2a_app(public_url: str) -> ASGIApp:
    from a2a import types as t
    from a2a.helpers import get_data_parts, new_data_message
    from a2a.server.agent_execution import AgentExecutor, RequestContext
    from a2a.server.events import EventQueue
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore
    from a2a.utils.constants import PROTOCOL_VERSION_CURRENT, TransportProtocol
    from a2a.utils.errors import UnsupportedOperationError
    from starlette.applications import Starlette

    class Echo(AgentExecutor):
        async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
            parts = list(context.message.parts) if context.message is not None else []
            data = get_data_parts(parts)
            await event_queue.enqueue_event(
                new_data_message(data[0] if data else {}, context_id=context.context_id)
            )

        async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
            raise UnsupportedOperationError(message="echo cannot be cancelled")

    card = t.AgentCard(
        name=ECHO, description="echoes its data part", version="1",
        supported_interfaces=[t.AgentInterface(url=f"{public_url}/", protocol_binding=TransportProtocol.JSONRPC,
                                               protocol_version=PROTOCOL_VERSION_CURRENT)],
        capabilities=t.AgentCapabilities(streaming=False), default_input_modes=["application/json"],
        default_output_modes=["application/json"],
        skills=[t.AgentSkill(id=ECHO, name=ECHO, description="echo", tags=[ECHO])],
    )  # fmt: skip
    handler = DefaultRequestHandler(agent_executor=Echo(), task_store=InMemoryTaskStore(), agent_card=card)
    return Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")])


@asynccontextmanager
async def _a2a_client(url: str) -> AsyncIterator[Send]:
    from a2a import types as t
    from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
    from a2a.helpers import new_data_part

    async with httpx.AsyncClient(timeout=TIMEOUT_S) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        client = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)

        async def send(blob: bytes) -> int:
            message = t.Message(message_id=str(uuid.uuid4()), role=t.Role.ROLE_USER,
                                parts=[new_data_part(json.loads(blob))])  # fmt: skip
            got = 0
            async for response in client.send_message(t.SendMessageRequest(message=message)):
                got += response.ByteSize()
            return got

        try:
            yield send
        finally:
            await client.close()


# --- acp: acp-sdk's Server agent and Client -------------------------------------------------------
def _acp_app(public_url: str) -> ASGIApp:
    from collections.abc import AsyncGenerator

    from ...mesh.protocols.acp.binding import JsonByDefault  # also sets uvicorn's old name the SDK imports

    from acp_sdk.models import Message, MessagePart  # isort: skip (after the binding's fix)
    from acp_sdk.server import RunYield, RunYieldResume, Server, create_app

    server = Server()

    @server.agent(name=ECHO)
    async def echo(input: list[Message]) -> AsyncGenerator[RunYield, RunYieldResume]:
        yield MessagePart(content=input[0].parts[0].content, content_type="application/json")

    return JsonByDefault(create_app(*server.agents))


@asynccontextmanager
async def _acp_client(url: str) -> AsyncIterator[Send]:
    from ...mesh.protocols.acp import uvicorn_name  # noqa: F401 (before acp_sdk loads)

    from acp_sdk.client import Client  # isort: skip
    from acp_sdk.models import Message, MessagePart

    async with Client(base_url=url, timeout=TIMEOUT_S) as client:

        async def send(blob: bytes) -> int:
            run = await client.run_sync(
                [
                    Message(
                        role="user",
                        parts=[MessagePart(content=blob.decode(), content_type="application/json")],
                    )
                ],
                agent=ECHO,
            )
            return sum(len(p.content or "") for m in run.output for p in m.parts)

        yield send


# --- mcp: an MCPServer tool and the SDK's Client(url) -----------------------------------------------
def _mcp_app(public_url: str) -> ASGIApp:
    from mcp.server.mcpserver import MCPServer
    from mcp.types import TextContent

    server = MCPServer(ECHO)

    def echo(packet: dict[str, Any]) -> TextContent:
        """Echo the packet."""
        return TextContent(type="text", text=json.dumps(packet))

    # the SDK reads the annotations, which this module's future import leaves as names it
    # cannot resolve here (TextContent is imported in this function): given as types
    echo.__annotations__ = {"packet": dict[str, Any], "return": TextContent}
    server.tool(name=ECHO, structured_output=False)(echo)

    made: ASGIApp = server.streamable_http_app(streamable_http_path=MCP_PATH)
    return made


@asynccontextmanager
async def _mcp_client(url: str) -> AsyncIterator[Send]:
    from mcp import Client
    from mcp.types import TextContent

    async with Client(f"{url}{MCP_PATH}") as client:

        async def send(blob: bytes) -> int:
            result = await client.call_tool(ECHO, {"packet": json.loads(blob)})
            return sum(len(c.text) for c in result.content if isinstance(c, TextContent))

        yield send
