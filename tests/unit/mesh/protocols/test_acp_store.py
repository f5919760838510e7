"""``acp/store.py``: the keyed store wakes only the watchers of the key written, ends a finished
run's cancel watch, and leaves acp-sdk's own behaviour (its Executor's cancel, its Client's
runs) as on the SDK's default ``MemoryStore``, which each test runs too as the control."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from acp_sdk.client import Client
from acp_sdk.models import Message, MessagePart, RunStatus
from pydantic import BaseModel

from gaiamesh.mesh.protocols.acp.server import server_app
from gaiamesh.mesh.protocols.acp.store import KeyedStore, make

from acp_sdk.server.executor import RunData  # isort: skip (after the server's fix of uvicorn's old name)


class Value(BaseModel):
    n: int


@pytest.mark.parametrize(("kind", "a_reads"), [("keyed", {"n": 2}), ("memory", None)])
async def test_a_write_wakes_only_the_watchers_of_its_key(kind: str, a_reads: dict[str, int] | None) -> None:
    store: Any = make(kind)
    ready_a, ready_b = asyncio.Event(), asyncio.Event()
    next_a = asyncio.ensure_future(anext(store.watch("a", ready=ready_a)))
    next_b = asyncio.ensure_future(anext(store.watch("b", ready=ready_b)))
    await ready_a.wait()
    await ready_b.wait()
    await store.set("b", Value(n=1))
    if kind == "keyed":
        assert store.woken("a") == 0 and store.woken("b") == 1  # plain calls: only b's watch woken
    assert (await next_b).model_dump() == {"n": 1}
    await store.set("a", Value(n=2))
    # MemoryStore's one event woke a's watcher at b's write: it read its key before a was written
    got = await next_a
    assert (got.model_dump() if got is not None else None) == a_reads


class Agent:
    """An agent whose every run waits until cancelled (``hang``), or answers at once."""

    node_id, tool, description = "7", "echo", "echoes"
    consumes = emits = frozenset({"doc_init"})
    reads: frozenset[str] = frozenset()
    answers_text = False
    acp_store = "keyed"

    def __init__(self) -> None:
        self.started = asyncio.Event()

    async def answer(self, blob: bytes, inner: str) -> AsyncIterator[bytes]:
        if blob == b'"hang"':
            self.started.set()
            await asyncio.Event().wait()  # until the run is cancelled
        yield blob


def _input(blob: str) -> list[Message]:
    return [Message(role="user", parts=[MessagePart(content=blob, content_type="application/json")])]


async def _terminal(store: Any, run_id: object) -> RunData:
    runs = store.as_store(model=RunData, prefix="run_")
    data = await runs.get(run_id)
    if not data.run.status.is_terminal:  # no await between this read and the watch's start
        async with contextlib.aclosing(runs.watch(run_id)) as watch:
            async for data in watch:
                if data.run.status.is_terminal:
                    break
    assert isinstance(data, RunData)
    return data


@pytest.mark.parametrize("kind", ["keyed", "memory"])
async def test_the_sdk_cancels_a_run_and_a_finished_run_leaves_no_watch(kind: str) -> None:
    agent, store = Agent(), make(kind)
    transport = httpx.ASGITransport(app=server_app(agent, store))  # type: ignore[arg-type]
    async with asyncio.timeout(20), Client(base_url="http://acp", transport=transport) as client:
        done = [await client.run_sync(_input('"echo"'), agent="echo") for _ in range(3)]
        assert [run.status for run in done] == [RunStatus.COMPLETED] * 3
        run = await client.run_async(_input('"hang"'), agent="echo")
        await agent.started.wait()
        await client.run_cancel(run_id=run.run_id)  # the SDK's Executor watches the cancel key
        assert (await _terminal(store, run.run_id)).run.status == RunStatus.CANCELLED
        assert (await client.run_status(run_id=run.run_id)).status == RunStatus.CANCELLED
    # Each of the 4 runs' Executor watched its cancel key; on the keyed store those watches end
    # with their runs, on MemoryStore each waits (and wakes at every write) for the process's life.
    watching = [t for t in asyncio.all_tasks() if "_watch_for_cancellation" in repr(t.get_coro())]
    if watching:  # on the keyed store, those still ending
        _, pending = await asyncio.wait(watching, timeout=2 if kind == "memory" else 20)
        assert len(pending) == (4 if kind == "memory" else 0)
    else:
        assert kind == "keyed"
    if isinstance(store, KeyedStore):
        assert store.watched() == 0
    # the hung run's agent task: the SDK cancels the run's Executor, not the agent's generator
    left = asyncio.all_tasks() - {asyncio.current_task()}
    for task in left:
        task.cancel()
    await asyncio.gather(*left, return_exceptions=True)


async def test_a_stored_run_is_a_copy_the_executors_later_changes_do_not_reach() -> None:
    """What MemoryStore's JSON copy gives, the keyed store's snapshot gives: a read sees the run
    as it was written, and each read is a new object (the app changes the one it reads)."""
    from acp_sdk.models import MessagePartEvent, Run

    store = KeyedStore[Any]()
    runs = store.as_store(model=RunData, prefix="run_")
    part = MessagePart(content="{}", content_type="application/json")
    live = RunData(run=Run(agent_name="echo", output=[Message(role="agent/echo", parts=[part])]))
    live.events.append(MessagePartEvent(part=part))
    await runs.set(live.key, live)
    completed = live.run.output[0].completed_at
    # what the SDK's Executor does to its run after a write
    live.run.status = RunStatus.COMPLETED
    live.run.output[0].parts.append(part)
    live.run.output[0].completed_at = None
    live.events.append(MessagePartEvent(part=part))
    read = await runs.get(live.key)
    assert read is not None and read.run.status == RunStatus.CREATED
    assert len(read.run.output[0].parts) == 1 and read.run.output[0].completed_at == completed and len(read.events) == 1
    read.run.status = RunStatus.CANCELLING  # as the app's find_run_data does to the run it read
    again = await runs.get(live.key)
    assert again is not None and again.run.status == RunStatus.CREATED
    # the same through the raw store, as MemoryStore reads it
    raw = await store.get(f"run_{live.key}")
    assert raw is not None and RunData.model_validate(raw.model_dump()) == again
