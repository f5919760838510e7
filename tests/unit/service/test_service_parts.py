"""The service's pure parts by plain calls: session states, tokens, the capped history."""

from __future__ import annotations

import time
from pathlib import Path

import jwt
import pytest

from gaiamesh.service.auth import AuthError, Authority
from gaiamesh.service.models import SessionState
from gaiamesh.service.sessions import IllegalTransition, transition
from gaiamesh.service.store import Store

SECRET = "s" * 40


def test_session_state_machine() -> None:
    s = transition(SessionState.INIT, SessionState.RUNNING)
    s = transition(s, SessionState.STOP)
    assert transition(s, SessionState.RUNNING) is SessionState.RUNNING
    assert transition(SessionState.INIT, SessionState.STOP) is SessionState.STOP  # ended before a question
    for current, target in [
        (SessionState.INIT, SessionState.INIT),
        (SessionState.RUNNING, SessionState.RUNNING),
        (SessionState.STOP, SessionState.INIT),
        (SessionState.RUNNING, SessionState.INIT),
    ]:
        with pytest.raises(IllegalTransition, match=f"session is {current}: it cannot go to {target}"):
            transition(current, target)


def test_access_key_and_session_tokens() -> None:
    auth = Authority("the-key", SECRET, ttl=60)
    assert auth.principal("the-key").is_admin
    token, expires = auth.issue("abc")
    who = auth.principal(token)
    assert who.session_id == "abc" and not who.is_admin and expires > time.time()
    assert who.may_see("abc") and not who.may_see("other") and not who.may_see(None)
    with pytest.raises(AuthError, match="no credentials"):
        auth.principal(None)
    with pytest.raises(AuthError, match="signature is invalid"):
        auth.principal(jwt.encode({"sub": "abc", "scope": "session", "exp": time.time() + 60}, "x" * 40, "HS256"))
    with pytest.raises(AuthError, match="expired"):
        auth.principal(jwt.encode({"sub": "abc", "scope": "session", "exp": time.time() - 5}, SECRET, "HS256"))
    with pytest.raises(AuthError, match="scope 'admin'"):
        auth.principal(jwt.encode({"sub": "abc", "scope": "admin", "exp": time.time() + 60}, SECRET, "HS256"))
    with pytest.raises(AuthError, match="not an access key or a valid session token"):
        auth.principal("wrong-key")
    with pytest.raises(AuthError, match="not an access key"):  # "none" algorithm is never accepted
        auth.principal(jwt.encode({"sub": "abc", "scope": "session", "exp": time.time() + 60}, None, "none"))
    login, login_expires = auth.issue_login()  # the page's cookie: the key's holder, not a session
    assert auth.principal(login).is_admin and login_expires > time.time()
    assert auth.is_key("the-key") and not auth.is_key("the-key2") and not auth.is_key(None)
    with pytest.raises(AuthError, match="signature is invalid"):  # a login token signed elsewhere
        auth.principal(jwt.encode({"sub": "", "scope": "login", "exp": time.time() + 60}, "x" * 40, "HS256"))
    with pytest.raises(ValueError, match="GAIAMESH_ACCESS_KEY is empty"):
        Authority("", SECRET, 60)
    with pytest.raises(ValueError, match="at least 32 characters"):
        Authority("k", "short", 60)


def test_history_is_capped_and_counts_what_it_dropped(tmp_path: Path) -> None:
    store = Store(tmp_path / "state.db")
    store.add_session("s1", {"task": "solar-farm"})
    store.add_session("s2", {"task": "solar-farm"})
    for i in range(7):
        store.add_message("s1", "question", {"text": f"q{i}"}, None, cap=5)
    store.add_message("s2", "question", {"text": "other"}, None, cap=5)
    kept = [m["content"] for m in store.messages("s1")]
    assert kept == [f'{{"text": "q{i}"}}' for i in range(2, 7)]
    assert store.session("s1")["dropped"] == 2 and store.session("s2")["dropped"] == 0
    store.close()
    again = Store(tmp_path / "state.db")  # nothing is lost across a reopen
    assert len(again.messages("s1")) == 5 and again.session("s1")["dropped"] == 2


async def test_a_subscriber_that_falls_behind_is_dropped_never_the_run(tmp_path: Path) -> None:
    from gaiamesh.service.live import EVENT_BACKLOG, LiveRun, Subscriber
    from gaiamesh.service.models import NoteEvent
    from gaiamesh.settings import load_settings
    from gaiamesh.tasks import Task

    live = LiveRun("r1", None, Task("t", "doc", "q?", "a", tmp_path), load_settings(), tmp_path)
    slow, keen = Subscriber([], closed=False), Subscriber([], closed=False)
    live.subscribers |= {slow, keen}
    for n in range(EVENT_BACKLOG + 10):
        live.publish(lambda seq, n=n: NoteEvent(seq=seq, text=f"event {n}"))
        while not keen.queue.empty():  # the keen one keeps up
            keen.queue.get_nowait()
    assert slow.dropped and slow not in live.subscribers  # the slow one is let go ...
    assert not keen.dropped and keen in live.subscribers
    assert len(live.events) == EVENT_BACKLOG + 10  # ... and the run's own record is complete
    late = Subscriber(list(live.events), live.closed)  # a late reader replays everything
    assert late.queue.qsize() == EVENT_BACKLOG + 10
