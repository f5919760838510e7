"""One real agent called from outside the relay with the SDKs' own clients, unmodified (issue 62,
item 2): each protocol's document (the MCP tool list, the A2A card, the ACP manifest) says what
the agent takes and emits, with the JSON schema of its packets, which reads a packet the relay
sends; and the search agent answers a plain text query about a document with passages of text,
writing nothing under ``workspaces/``. A tool that takes packets only says so in the protocol's
own error."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import jsonschema
import mcp
import pytest
from a2a import types as a2a_types
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.helpers import new_text_part
from acp_sdk.client import Client
from acp_sdk.models import RunStatus
from google.protobuf import json_format

from gaiamesh.agents.native import HELLO
from gaiamesh.mesh.frames import doc_init

from ...conftest import free_port
from .test_agent import message, serving

ANSWER = "The observatory was opened in 1968 by the University of Tarnby."
FILLER = [
    "The road to the summit climbs through pine forest for eleven kilometres.",
    "Snow closes the upper car park from November until late April most years.",
    "Visitors may tour the dome on Saturday afternoons in the summer months.",
    "A small museum beside the entrance shows lenses, clocks and early photographs.",
]
DOC = " ".join([*FILLER * 4, ANSWER, *FILLER * 4])  # about 12 of doc_init's 400-character chunks
QUESTION = "When was the observatory opened?"


@contextlib.asynccontextmanager
async def native_agent(tmp: Path, node_id: str, tool: str) -> AsyncIterator[str]:
    """A real MeshAgent (fake model) and the base URL of its native protocols, once they answer."""
    native = free_port()
    async with serving(tmp, node_id, tool, native=native):
        base = f"http://127.0.0.1:{native}"
        async with httpx.AsyncClient(timeout=5) as http:
            for _ in range(100):  # the native server starts beside the WebSocket's
                with contextlib.suppress(httpx.HTTPError):
                    if (await http.get(base + HELLO)).status_code == 200:
                        break
                await asyncio.sleep(0.05)
        yield base


def passages_hold_the_answer(texts: list[str]) -> bool:
    return 0 < len(texts) <= 3 and any(ANSWER in " ".join(text.split()) for text in texts)


async def test_the_search_agent_describes_itself_and_answers_text(tmp_path: Path) -> None:
    relays = doc_init("relay-run", DOC, QUESTION).to_dict()  # a packet as the relay sends it
    async with native_agent(tmp_path, "0", "search") as base:
        # MCP: the tool's input schema is the packet's (or a query and its document)
        async with mcp.Client(f"{base}/mcp") as user:
            (tool,) = (await user.list_tools()).tools
            assert set(tool.input_schema["properties"]) == {"packet", "query", "document"}
            jsonschema.validate({"packet": relays}, tool.input_schema)
            with pytest.raises(jsonschema.ValidationError, match="'type' is a required property"):
                jsonschema.validate({"packet": {k: v for k, v in relays.items() if k != "type"}}, tool.input_schema)
            assert (tool.meta or {})["gaiamesh/emits"] == ["error", "search_docs"]
            said = await user.call_tool("search", {"query": QUESTION, "document": DOC})
            assert not said.is_error
            assert passages_hold_the_answer([c.text for c in said.content if isinstance(c, mcp.types.TextContent)])
            alone = await user.call_tool("search", {"query": QUESTION})  # no run's document held yet
            assert alone.is_error and "no document: send it as text before the query" in alone.content[0].text  # type: ignore[union-attr]

        # A2A: the card's name, its text mode, the schemas in its extension; a text message
        async with httpx.AsyncClient(timeout=10) as http:
            card = await A2ACardResolver(http, f"{base}/a2a").get_agent_card()
            assert card.name == "Gaia Mesh search agent (node 0)"
            assert "text/plain" in card.default_input_modes and "text/plain" in card.skills[0].input_modes
            assert "a packet of type doc_init" in card.skills[0].description
            params = json_format.MessageToDict(card.capabilities.extensions[0].params)
            jsonschema.validate(relays, params["takes_schema"])
            client = await create_client(f"{base}/a2a", ClientConfig(streaming=False, httpx_client=http))
            asked = a2a_types.Message(message_id=str(uuid.uuid4()), role=a2a_types.Role.ROLE_USER,
                                      parts=[new_text_part(DOC), new_text_part(QUESTION)])  # fmt: skip
            texts: list[str] = []
            async for response in client.send_message(a2a_types.SendMessageRequest(message=asked)):
                texts += [part.text for artifact in response.task.artifacts for part in artifact.parts]
            await client.close()
            assert passages_hold_the_answer(texts)

        # ACP: the manifest's annotations carry the schemas; a text run gets passages
        async with Client(base_url=f"{base}/acp", timeout=10) as acp:
            manifest = await acp.agent(name="search")
            assert "text/plain" in manifest.input_content_types
            mesh = manifest.metadata.annotations.model_dump()["gaiamesh"]  # type: ignore[union-attr]
            jsonschema.validate(relays, mesh["takes_schema"])
            run = await acp.run_sync([DOC, QUESTION], agent="search")
            assert run.status == RunStatus.COMPLETED
            assert passages_hold_the_answer([part.content or "" for m in run.output for part in m.parts])
            assert list((tmp_path / "0").iterdir()) == []  # no text call wrote anything
            # A run's document, sent as a packet: a query alone is then about it
            held = await acp.run_sync(message(doc_init("outside-1", DOC, QUESTION).to_dict()), agent="search")
            assert held.status == RunStatus.COMPLETED
            run = await acp.run_sync(QUESTION, agent="search")
            assert passages_hold_the_answer([part.content or "" for m in run.output for part in m.parts])


async def test_a_tool_that_takes_packets_refuses_text_saying_what_it_takes(tmp_path: Path) -> None:
    async with native_agent(tmp_path, "2", "triple") as base, Client(base_url=f"{base}/acp", timeout=10) as acp:
        manifest = await acp.agent(name="triple")
        assert manifest.input_content_types == ["application/json"]
        run = await acp.run_sync([DOC, QUESTION], agent="triple")
    assert run.status == RunStatus.FAILED and run.error is not None
    assert run.error.code == "invalid_input"
    assert run.error.message == (
        "acp: the triple tool takes packets, not text: send one packet of type events as JSON (its JSON "
        "schema is in the agent manifest's metadata.annotations.gaiamesh (takes_schema and emits_schema))"
    )
    assert list((tmp_path / "2").iterdir()) == []
