"""``MeshService``: the store, the run manager, the authority and the sessions, wired together.

A session is a conversation about one document (a bundled task or pasted text): each question
starts a run; the run's frames, answer and metrics come back as typed messages; the session
goes ``INIT -> RUNNING -> STOP`` and back to ``RUNNING`` with the next question.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from ..errors import Conflict, Forbidden, NotFound, Refused, RunStatus
from ..evaluation.metrics import RunMetrics
from ..mesh.frames import Turn
from ..settings import Settings
from ..tasks import bundled_names
from .auth import Authority, Principal
from .live import LiveRun, Subscriber
from .models import (
    Ask,
    AutoChat,
    History,
    Message,
    MessageType,
    Queued,
    RunRequest,
    RunView,
    SessionCreated,
    SessionRequest,
    SessionState,
    SessionView,
    StreamRequest,
    StreamView,
)
from .runs import RunManager
from .sessions import IllegalTransition, transition
from .store import Store
from .streams import StreamManager


class MeshService:
    """Everything the API does, as plain methods (the HTTP layer only translates)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.authority = Authority(settings.access_key, settings.session_secret, settings.session_ttl)
        self.store = Store(Path(settings.out_dir) / "gaiamesh.db")
        self.runs = RunManager(settings, self.store, on_finished=self._run_finished)
        self.streams = StreamManager(settings)
        self.recovered = self.runs.recover()
        waiting = {session for _, session in self.recovered.resumed}  # sessions whose queued run was queued again
        for row in self.store.sessions():  # a session whose run was cut off by a restart can go on
            if row["state"] == SessionState.RUNNING.value and row["id"] not in waiting:
                self.store.set_session_state(row["id"], SessionState.STOP.value)
                self._say(row["id"], MessageType.SYSTEM, {"text": "the service restarted; the run in flight was interrupted"})

    def close(self) -> None:
        self.store.close()

    # --- runs ------------------------------------------------------------------------------
    def run_view(self, who: Principal, run_id: str) -> RunView:
        view = self.runs.view(run_id)
        if not who.may_see(view.session_id):
            raise NotFound(f"no run {run_id}")  # another session's run does not exist for you
        return view

    def list_runs(self, who: Principal) -> list[RunView]:
        rows = self.store.runs(None if who.is_admin else who.session_id)
        return [self.runs.view(r["id"]) for r in rows]

    async def submit(self, who: Principal, request: RunRequest) -> RunView:
        """Queue a run; refused at once (Conflict) when its strategy's team is not running."""
        await self.runs.check_team(request)
        return self.runs.submit(request, session_id=who.session_id)

    def cancel(self, who: Principal, run_id: str) -> RunView:
        self.run_view(who, run_id)  # another session's run does not exist for this caller
        return self.runs.cancel(run_id)

    def artifacts(self, who: Principal, run_id: str) -> Path:
        self.run_view(who, run_id)
        return self.runs.artifacts(run_id)

    def subscribe(self, who: Principal, run_id: str) -> Subscriber:
        """A reader of the run's events from the first one."""
        self.run_view(who, run_id)
        return self.runs.subscribe(run_id)

    @property
    def queued(self) -> int:
        return self.runs.queued

    # --- streams ---------------------------------------------------------------------------
    # The access key's only: a stream is the machine's work for many minutes, not a session's.
    async def submit_stream(self, who: Principal, request: StreamRequest) -> StreamView:
        _key_only(who)
        if self.streams.current is None:  # busy: submit says so (after what is wrong with the request)
            await self.streams.check_team(request)
        return self.streams.submit(request)

    def list_streams(self, who: Principal) -> list[StreamView]:
        _key_only(who)
        return self.streams.views()

    def stream_view(self, who: Principal, stream_id: str) -> StreamView:
        _key_only(who)
        return self.streams.view(stream_id)

    def stream_items(self, who: Principal, stream_id: str) -> Path:
        _key_only(who)
        return self.streams.items_csv(stream_id)

    # --- sessions --------------------------------------------------------------------------
    async def create_session(self, who: Principal, request: SessionRequest) -> SessionCreated:
        if not who.is_admin:
            raise Forbidden("only the access key starts sessions")
        await self.runs.check_team(request)  # refused now, not at the first question
        if request.task is not None:
            self.runs.resolve(RunRequest(task=request.task))  # 404 now, not at the first question
        elif request.document is not None:
            self.runs.resolve(RunRequest(document=request.document, question="?"))
        autochat = request.autochat
        if autochat is not None:
            if autochat.all_tasks:
                tasks = bundled_names(self.settings.tasks_dir)
                autochat = autochat.model_copy(update={"queue": [*autochat.queue, *(Queued(task=t) for t in tasks)],
                                                       "all_tasks": False})  # fmt: skip
            for item in autochat.queue:
                if item.task is not None:
                    self.runs.resolve(RunRequest(task=item.task))  # 404 now, not halfway through
        session_id = str(uuid.uuid4())
        self.store.add_session(session_id, request.model_dump(exclude_none=True, exclude={"autochat"}))
        token, expires = self.authority.issue(session_id)
        self._say(session_id, MessageType.SYSTEM, {"text": "session started", "source": request.task or "document"})
        if autochat is not None:
            self.store.set_autochat(session_id, autochat.model_dump(mode="json"))
            self._autochat(session_id)
        row = self.store.session(session_id)
        state = SessionState(row["state"]) if row is not None else SessionState.INIT
        return SessionCreated(id=session_id, token=token, expires_at=expires, state=state)

    def _session_row(self, who: Principal, session_id: str) -> dict[str, object]:
        row = self.store.session(session_id)
        if row is None or not who.may_see(session_id):
            raise NotFound(f"no session {session_id}")
        return dict(row)

    def session(self, who: Principal, session_id: str) -> SessionView:
        row = self._session_row(who, session_id)
        source = json.loads(str(row["source"]))
        return SessionView(
            id=session_id, state=SessionState(str(row["state"])), created=float(row["created"]),  # type: ignore[arg-type]
            task=source.get("task"), messages=len(self.store.messages(session_id)),
            dropped=int(row["dropped"]), runs=[r["id"] for r in self.store.runs(session_id)],  # type: ignore[call-overload]
            autochat=AutoChat.model_validate_json(str(row["autochat"])) if row["autochat"] else None,
        )  # fmt: skip

    def sessions(self, who: Principal) -> list[SessionView]:
        ids = [r["id"] for r in self.store.sessions()] if who.is_admin else [who.session_id]
        return [self.session(who, i) for i in ids if i is not None]

    def history(self, who: Principal, session_id: str) -> History:
        row = self._session_row(who, session_id)
        messages = [
            Message(id=m["id"], type=MessageType(m["type"]), run_id=m["run_id"], content=json.loads(m["content"]),
                    created=m["created"])
            for m in self.store.messages(session_id)
        ]  # fmt: skip
        return History(messages=messages, dropped=int(row["dropped"]))  # type: ignore[call-overload]

    def change_state(self, who: Principal, session_id: str, target: SessionState) -> SessionView:
        row = self._session_row(who, session_id)
        current = SessionState(str(row["state"]))
        if target is SessionState.RUNNING:
            raise Conflict("a session starts RUNNING by asking a question, not by a state change")
        self._move(session_id, current, target)
        return self.session(who, session_id)

    def switch_autochat(self, who: Principal, session_id: str, enabled: bool) -> SessionView:
        row = self._session_row(who, session_id)
        if not row["autochat"]:
            raise Conflict(f"session {session_id} was started without AutoChat")
        autochat = AutoChat.model_validate_json(str(row["autochat"])).model_copy(update={"enabled": enabled})
        self.store.set_autochat(session_id, autochat.model_dump(mode="json"))
        if enabled and SessionState(str(row["state"])) is not SessionState.RUNNING:
            self._autochat(session_id)
        return self.session(who, session_id)

    def ask(self, who: Principal, session_id: str, ask: Ask) -> RunView:
        """A question: the session goes RUNNING and a run starts on its document."""
        self._session_row(who, session_id)
        return self._start(session_id, ask.question, ask.answer)

    def _start(self, session_id: str, question: str | None, answer: str | None, task: str | None = None) -> RunView:
        """Start the session's next run: on its document with the conversation's memory, or (from
        AutoChat's queue) on another bundled ``task``, without it."""
        row = self.store.session(session_id)
        assert row is not None
        current = SessionState(str(row["state"]))
        try:
            transition(current, SessionState.RUNNING)
        except IllegalTransition as exc:
            raise Conflict(f"{exc}; wait for the answer to the last question") from exc
        source = {k: v for k, v in json.loads(str(row["source"])).items() if task is None or k != "document"}
        fields: dict[str, object] = {"question": question, "answer": answer}
        if task is not None:
            fields["task"] = task
        else:
            fields["history"] = self.memory(session_id)
        request = RunRequest.model_validate({**source, **fields})
        view = self.runs.submit(request, session_id=session_id)  # may refuse (429): nothing changed yet
        self._move(session_id, current, SessionState.RUNNING)
        self._say(session_id, MessageType.QUESTION, {"text": view.question, "task": view.task_id}, view.id)
        return view

    def _autochat(self, session_id: str) -> None:
        """If the session has AutoChat on and turns left, send its next message (the session is
        INIT or STOP here: never while a run is in flight)."""
        row = self.store.session(session_id)
        if row is None or not row["autochat"] or row["state"] == SessionState.RUNNING.value:
            return
        auto = AutoChat.model_validate_json(str(row["autochat"]))
        if not auto.enabled or auto.sent >= auto.max_turns:
            return
        if auto.queue:
            item, rest = auto.queue[0], auto.queue[1:]
        elif auto.continuation:
            item, rest = Queued(question=auto.continuation), []
        else:
            return
        auto = auto.model_copy(update={"queue": rest, "sent": auto.sent + 1})
        self.store.set_autochat(session_id, auto.model_dump(mode="json"))
        try:
            self._start(session_id, item.question, item.answer, item.task)
        except Refused as exc:
            self.store.set_autochat(session_id, auto.model_copy(update={"enabled": False}).model_dump(mode="json"))
            self._say(session_id, MessageType.SYSTEM, {"text": f"AutoChat stopped: {exc}"})

    def memory(self, session_id: str) -> list[Turn]:
        """The session's last ``MEMORY_TURNS`` answered questions, oldest first."""
        if self.settings.memory_turns <= 0:
            return []
        questions: dict[str, str] = {}
        turns: list[Turn] = []
        for m in self.store.messages(session_id):
            content = json.loads(m["content"])
            if m["type"] == MessageType.QUESTION.value and m["run_id"]:
                questions[m["run_id"]] = content["text"]
            elif m["type"] == MessageType.ANSWER.value and m["run_id"] in questions:
                # the question as answered: a follow-up's pronouns already resolved
                asked = content.get("question") or questions[m["run_id"]]
                turns.append(Turn(question=asked, answer=content["text"]))
        return turns[-self.settings.memory_turns :]

    def _move(self, session_id: str, current: SessionState, target: SessionState) -> None:
        try:
            transition(current, target)
        except IllegalTransition as exc:
            raise Conflict(str(exc)) from exc
        self.store.set_session_state(session_id, target.value)

    def _say(self, session_id: str, mtype: MessageType, content: dict[str, object], run_id: str | None = None) -> None:
        self.store.add_message(session_id, mtype.value, content, run_id, self.settings.history_cap)

    def _run_finished(self, live: LiveRun, metrics: RunMetrics | None) -> None:
        """A session's run ended: its frames, answer and metrics (or error) join the history."""
        if live.session_id is None:
            return
        sid = live.session_id
        for event in live.events:
            if event.kind == "frame":
                self._say(sid, MessageType.FRAME, event.model_dump(exclude={"kind", "seq"}), live.id)
        if metrics is not None and metrics.status == RunStatus.OK:
            answer: dict[str, object] = {"text": metrics.prediction, "question": live.answered or metrics.question}
            self._say(sid, MessageType.ANSWER, answer, live.id)
            keep = ("quality_score", "exact_match", "pkt_cnt", "bytes_tx", "bytes_rx", "token_sum", "elapsed_ms")
            self._say(sid, MessageType.METRICS, {k: getattr(metrics, k) for k in keep}, live.id)
        else:
            reason = metrics.error if metrics is not None else "the run failed before it produced metrics"
            self._say(sid, MessageType.ERROR, {"status": metrics.status if metrics else RunStatus.FAILED, "text": reason}, live.id)
        row = self.store.session(sid)
        if row is not None and row["state"] == SessionState.RUNNING.value:
            self.store.set_session_state(sid, SessionState.STOP.value)
            self._autochat(sid)


def _key_only(who: Principal) -> None:
    if not who.is_admin:
        raise Forbidden("streams are the access key's: a session token does not open them")
