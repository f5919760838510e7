"""The store our agents' ACP servers hand ``acp-sdk``'s ``create_app`` (its ``store=``
parameter, the SDK's extension point): ``ACP_STORE=keyed`` (the default) or ``memory`` (the
SDK's own default, ``MemoryStore(limit=1000, ttl=1h)``).

Why not the SDK's default: ``MemoryStore`` has one ``asyncio.Event`` for every key, so each
write wakes every watcher, and each re-reads and re-validates its own key. And the SDK's
``Executor._watch_for_cancellation`` loops ``while not self.task.done()`` around
``cancel_store.watch(key)``, which never returns: every run ever started leaves a watcher
behind, so each write costs O(runs so far). 77 % of a stream coordinator's CPU was there
(docs/results/2026-12-05-stream-native-scale.md, "acp's store").

:class:`KeyedStore` is ``MemoryStore`` (the same cache, limit and TTL; a read is a new object
the app may change, a stored value one the app's later changes do not reach) with three changes:

- a write wakes only the watchers of the key written, as the SDK's production ``RedisStore``
  does (a keyspace channel per key) and its ``PostgreSQLStore`` (a ``NOTIFY`` payload per key);
- when a run's record turns terminal, the watch of that run's cancel key ends (nothing writes
  it any more: the app refuses to cancel a finished run), so the Executor's loop sees its task
  done and returns, and the run's Executor, its request and its events are freed;
- a run's record is copied without JSON (:func:`snapshot`), and the store's views read a value
  once, as its model (the SDK's ``StoreView`` parses, dumps and validates it again): the
  Executor writes the whole run at every event, and a stream coordinator's one run carries
  every sub-task it sends, so a JSON copy made each write quadratic in the run's length.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from typing import Any, Generic, Literal

from cachetools import TTLCache
from pydantic import BaseModel

from . import uvicorn_name  # noqa: F401 (before acp_sdk.server loads)

from acp_sdk.server.executor import RunData  # noqa: E402  # isort: skip
from acp_sdk.server.store import Store  # noqa: E402
from acp_sdk.server.store.store import StoreModel, T, U  # noqa: E402

Kind = Literal["keyed", "memory"]
LIMIT, TTL = 1000, timedelta(hours=1)  # MemoryStore's in create_app
RUN, CANCEL = "run_", "run_cancel_"  # create_app's prefixes of a run's record and its cancel request


class _Watch:
    """One ``watch`` call: woken by a write to its key, or ended."""

    __slots__ = ("ended", "woken")

    def __init__(self) -> None:
        self.woken = asyncio.Event()
        self.ended = False


class KeyedStore(Store[T], Generic[T]):
    """acp-sdk's ``MemoryStore`` with a wake-up per key, its views reading each value once
    (module docstring)."""

    def __init__(self, *, limit: int = LIMIT, ttl: timedelta | None = TTL) -> None:
        super().__init__()
        self._cache: TTLCache[str, str | RunData] = TTLCache(maxsize=limit, ttl=ttl, timer=datetime.now)  # type: ignore[arg-type]
        self._watches: dict[str, set[_Watch]] = {}

    async def get(self, key: object) -> T | None:
        return self.read(str(key), StoreModel)  # type: ignore[return-value]

    async def set(self, key: object, value: T | None) -> None:
        self.put(str(key), value)

    def watch(self, key: object, *, ready: asyncio.Event | None = None) -> AsyncIterator[T | None]:
        return self.watch_read(str(key), StoreModel, ready)  # type: ignore[return-value]

    def as_store(self, model: type[U], prefix: object = "") -> Store[U]:
        return KeyedView(self, model, str(prefix))

    def read(self, name: str, model: type[U]) -> U | None:
        """The value of ``name`` as a new ``model``, as MemoryStore's JSON copy gives it."""
        value = self._cache.get(name)
        if value is None or value == "":
            return None
        if isinstance(value, str):
            return model.model_validate_json(value)
        return snapshot(value) if model is RunData else model.model_validate(value.model_dump())  # type: ignore[return-value]

    def put(self, name: str, value: BaseModel | None) -> None:
        if value is None:
            del self._cache[name]  # as MemoryStore: a missing key raises
        else:
            self._cache[name] = snapshot(value) if isinstance(value, RunData) else value.model_dump_json()
        for watch in self._watches.get(name, ()):
            watch.woken.set()
        if isinstance(value, RunData) and value.run.status.is_terminal and name.startswith(RUN):
            self._end(CANCEL + name.removeprefix(RUN))

    def _end(self, name: str) -> None:
        for watch in self._watches.get(name, ()):
            watch.ended = True
            watch.woken.set()

    async def watch_read(self, name: str, model: type[U], ready: asyncio.Event | None) -> AsyncIterator[U | None]:
        watch = _Watch()
        self._watches.setdefault(name, set()).add(watch)
        try:
            if ready:
                ready.set()
            while True:
                await watch.woken.wait()
                watch.woken.clear()  # before the read: a write after it wakes this watch again
                if watch.ended:
                    return
                yield self.read(name, model)
        finally:
            watching = self._watches.get(name)
            if watching is not None:
                watching.discard(watch)
                if not watching:
                    del self._watches[name]

    def woken(self, key: object) -> int:
        """How many watches of ``key`` a write has woken that have not read it yet."""
        return sum(w.woken.is_set() for w in self._watches.get(str(key), ()))

    def watched(self) -> int:
        """How many watches are open (the tests count the ones a finished run leaves)."""
        return sum(len(w) for w in self._watches.values())


class KeyedView(Store[U], Generic[U]):
    """``create_app``'s view of one kind of value (runs, cancels, resumes, sessions) under a
    prefix: the SDK's ``StoreView`` reads a value as ``StoreModel`` from its JSON, dumps it and
    validates it again as its model; this reads it once, as its model."""

    def __init__(self, store: KeyedStore[Any], model: type[U], prefix: str) -> None:
        super().__init__()
        self._store, self._model, self._prefix = store, model, prefix

    async def get(self, key: object) -> U | None:
        return self._store.read(f"{self._prefix}{key!s}", self._model)

    async def set(self, key: object, value: U | None) -> None:
        self._store.put(f"{self._prefix}{key!s}", value)

    def watch(self, key: object, *, ready: asyncio.Event | None = None) -> AsyncIterator[U | None]:
        return self._store.watch_read(f"{self._prefix}{key!s}", self._model, ready)


def snapshot(data: RunData) -> RunData:
    """A copy of a run's record that the SDK's later changes to it do not reach, without
    serializing it: the SDK's ``Executor`` changes the run's fields, its messages' fields and
    their lists of parts in place, so those are copied; it never changes an event once stored
    (``_emit`` stores a deep copy) nor a message part once yielded, so those are shared. The
    JSON copy MemoryStore makes at every write costs the run's whole length: one of our runs
    carries every frame an agent emits in a run (a stream's coordinator: 1,000 subtasks)."""
    run = data.run
    output = [m.model_copy(update={"parts": list(m.parts)}) for m in run.output]
    return RunData.model_construct(run=run.model_copy(update={"output": output}), events=list(data.events))


def make(kind: str) -> Store[StoreModel]:
    """The store ``ACP_STORE`` names (``Kind``), for ``create_app(store=...)``."""
    if kind == "memory":
        from acp_sdk.server.store import MemoryStore

        return MemoryStore(limit=LIMIT, ttl=TTL)  # type: ignore[arg-type]
    return KeyedStore()
