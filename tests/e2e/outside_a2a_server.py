"""An A2A agent someone else wrote, in the style of a2a-sdk's own examples (its hello-world
agent): an ``AgentExecutor`` that answers each message with one text message, its card, and the
SDK's JSON-RPC routes in a Starlette app under uvicorn. Nothing of Gaia Mesh is imported. Run as
``python outside_a2a_server.py PORT``.

Its answer shows what it was given: the first line of the text (a worker's task, or the
pipeline's question), and whether the run's document came with it."""

import sys

import uvicorn
from a2a.helpers import new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from a2a.utils.errors import UnsupportedOperationError
from starlette.applications import Starlette


class EchoingAnswerer(AgentExecutor):
    """Answers every message at once."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        lines = text.splitlines()
        with_doc = "with the document" if "Document:" in lines else "without a document"
        await event_queue.enqueue_event(new_text_message(f"a2a answers {lines[0]!r} {with_doc}"))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise UnsupportedOperationError()


def main(port: int) -> None:
    skill = AgentSkill(
        id="answer",
        name="Answer",
        description="answers a question",
        tags=["answer"],
        examples=["What is the capital of France?"],
    )
    card = AgentCard(
        name="Echoing Answerer",
        description="Answers a question",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(
                url=f"http://127.0.0.1:{port}/", protocol_binding="JSONRPC", protocol_version="1.0"
            )
        ],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[skill],
    )
    handler = DefaultRequestHandler(
        agent_executor=EchoingAnswerer(), task_store=InMemoryTaskStore(), agent_card=card
    )
    app = Starlette(routes=create_agent_card_routes(card) + create_jsonrpc_routes(handler, rpc_url="/"))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main(int(sys.argv[1]))
