"""The whole mesh as an A2A agent (``/a2a``) and an ACP agent (``/acp``) on the service, used by
each protocol's own SDK client as its documentation shows, with the access key as a bearer
header: a plain-text question about a bundled task's document is answered by an ordinary run of
the mesh (the API knows it, finished), named in the reply."""

from __future__ import annotations

import asyncio
import time
import uuid

import httpx
import pytest
from a2a import types as a2a_types
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers import get_artifact_text, get_message_text, new_text_part
from a2a.utils.errors import A2AError
from acp_sdk.models import GenericEvent, RunStatus

from gaiamesh.tasks import load_task
from gaiamesh.tasks.answers import normalize

from ..conftest import TASKS
from ..standard_clients import a2a_send, acp_run, bearer, run_id_in
from .conftest import KEY, Service

pytestmark = [pytest.mark.e2e, pytest.mark.model]

TASK = "glass-museum"  # a bundled task the pipeline answers exactly (test_mcp.py asks it too)
BEARER = bearer(KEY)


def finished(service: Service, run_id: str) -> bool:
    view = service.http.get(f"/api/runs/{run_id}").json()
    return bool(
        view["state"] == "finished" and view["metrics"]["status"] == "ok" and view["task_id"] == "document"
    )


def test_an_a2a_client_asks_the_mesh(service: Service) -> None:
    task = load_task(TASKS / TASK)
    card, responses = asyncio.run(a2a_send(f"{service.url}/a2a", KEY, task.doc, task.question))
    assert card.name == "Gaia Mesh" and [s.id for s in card.skills] == ["ask"]
    assert "text/plain" in card.default_input_modes and list(card.default_output_modes) == ["text/plain"]
    assert card.supported_interfaces[0].url == f"{service.url}/a2a/"
    answers = [
        get_artifact_text(r.artifact_update.artifact) for r in responses if r.HasField("artifact_update")
    ]
    assert len(answers) == 1 and normalize(answers[0].splitlines()[0]) == normalize(task.answer), answers
    run_id = run_id_in(answers[0])
    assert finished(service, run_id)
    # streamed: the run's progress as working status updates, then completed
    states = [(r.status_update.status.state, get_message_text(r.status_update.status.message))
              for r in responses if r.HasField("status_update")]  # fmt: skip
    assert states[0] == (a2a_types.TaskState.TASK_STATE_WORKING, f"run {run_id}: queued"), states
    assert (
        any("doc_init" in said for _, said in states)
        and states[-1][0] == a2a_types.TaskState.TASK_STATE_COMPLETED
    )
    # not streamed: the finished Task, its answer the same (the model's answers from the memo)
    _, (done,) = asyncio.run(a2a_send(f"{service.url}/a2a", KEY, task.doc, task.question, stream=False))
    assert done.task.status.state == a2a_types.TaskState.TASK_STATE_COMPLETED
    (artifact,) = done.task.artifacts
    assert artifact.name == "answer" and normalize(get_artifact_text(artifact).splitlines()[0]) == normalize(
        task.answer
    )
    # a document over MAX_DOC_BYTES: the protocol's invalid-params error, in the API's words
    with pytest.raises(A2AError, match="MAX_DOC_BYTES is 4000"):
        asyncio.run(a2a_send(f"{service.url}/a2a", KEY, "x" * 4001, task.question))


async def a2a_cancel(url: str, *texts: str) -> tuple[str, a2a_types.Task]:
    """Send a streamed message, and cancel its task at its first status update: the run's id
    and the task as tasks/cancel returned it."""
    async with httpx.AsyncClient(headers=BEARER, timeout=httpx.Timeout(30, read=300)) as http:
        client = ClientFactory(ClientConfig(httpx_client=http)).create(
            await A2ACardResolver(http, url).get_agent_card()
        )
        message = a2a_types.Message(message_id=str(uuid.uuid4()), role=a2a_types.Role.ROLE_USER,
                                    parts=[new_text_part(t) for t in texts])  # fmt: skip
        async for response in client.send_message(a2a_types.SendMessageRequest(message=message)):
            if response.HasField("status_update"):
                run_id = run_id_in(get_message_text(response.status_update.status.message))
                task = await client.cancel_task(
                    a2a_types.CancelTaskRequest(id=response.status_update.task_id)
                )
                break
        await client.close()
    return run_id, task


def test_cancelling_the_a2a_task_cancels_the_run(service: Service) -> None:
    task = load_task(TASKS / TASK)
    run_id, cancelled = asyncio.run(a2a_cancel(f"{service.url}/a2a", task.doc, "Who designed the building?"))
    assert cancelled.status.state == a2a_types.TaskState.TASK_STATE_CANCELED
    for _ in range(100):  # the run ends cancelled as DELETE /api/runs/<id> ends it
        if (view := service.http.get(f"/api/runs/{run_id}").json())["state"] != "running":
            break
        time.sleep(0.1)
    assert view["state"] == "cancelled", view


def test_an_acp_client_asks_the_mesh(service: Service) -> None:
    task = load_task(TASKS / TASK)
    agents, run, events = asyncio.run(acp_run(f"{service.url}/acp", KEY, task.doc, task.question))
    assert agents == ["gaia-mesh"]
    assert run.status == RunStatus.COMPLETED, run
    answer = str(run.output[0].parts[0].content)
    assert normalize(answer.splitlines()[0]) == normalize(task.answer), answer
    run_id = run_id_in(answer)
    assert finished(service, run_id)
    progress = [e.generic.model_dump() for e in events if isinstance(e, GenericEvent)]
    assert progress[0] == {"run_id": run_id, "progress": "queued"} and progress[-1]["progress"] == "finished"


def test_no_key_no_agent(service: Service) -> None:
    for path in ("/a2a/.well-known/agent-card.json", "/acp/agents"):
        bare = httpx.get(f"{service.url}{path}")
        assert bare.status_code == 401 and "no credentials" in bare.json()["detail"], bare.text
        wrong = httpx.get(f"{service.url}{path}", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and "not an access key" in wrong.json()["detail"]
