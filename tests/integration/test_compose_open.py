"""The stack ``make up`` starts, used from outside by the three standard clients nobody here
wrote (tests/standard_clients.py): each sends a document and a plain-text question about it to
the network service's endpoint for its protocol, with the access key, and gets the mesh's answer;
the run behind each reply is an ordinary run of the stack's API."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from gaiamesh.tasks import load_task
from gaiamesh.tasks.answers import normalize

from ..conftest import TASKS
from ..standard_clients import ask_everywhere, bearer, run_id_in
from .conftest import KEY, Stack

pytestmark = pytest.mark.integration

TASK = "glass-museum"  # a bundled task the pipeline answers exactly; only its text is sent


def test_mcp_a2a_and_acp_clients_ask_the_stack_about_a_document(stack: Stack) -> None:
    task = load_task(TASKS / TASK)
    replies = asyncio.run(ask_everywhere(stack.api, KEY, task.doc, task.question))
    assert sorted(replies) == ["a2a", "acp", "mcp"]
    with httpx.Client(base_url=stack.api, headers=bearer(KEY), timeout=30) as api:
        for protocol, reply in replies.items():
            assert normalize(reply.splitlines()[0]) == normalize(task.answer), (protocol, reply)
            view = api.get(f"/api/runs/{run_id_in(reply)}").json()
            assert view["state"] == "finished" and view["metrics"]["status"] == "ok", (protocol, view)
            assert view["task_id"] == "document"  # the text it sent, not the bundled task
