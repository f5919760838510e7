"""Session rules, without I/O: the state machine, the history cap, the memory window."""

from __future__ import annotations

from ..errors import Conflict
from .models import SessionState

_ALLOWED: dict[SessionState, frozenset[SessionState]] = {
    SessionState.INIT: frozenset({SessionState.RUNNING, SessionState.STOP}),  # ended unused
    SessionState.RUNNING: frozenset({SessionState.STOP}),
    SessionState.STOP: frozenset({SessionState.RUNNING}),
}


class IllegalTransition(Conflict):
    """A state change the session's state machine does not allow."""


def transition(current: SessionState, target: SessionState) -> SessionState:
    """``INIT -> RUNNING -> STOP -> RUNNING ...`` (or ``INIT -> STOP``: ended before a question); anything else raises :class:`IllegalTransition`."""
    if target not in _ALLOWED[current]:
        allowed = ", ".join(sorted(_ALLOWED[current])) or "nothing"
        raise IllegalTransition(f"session is {current}: it cannot go to {target} (allowed: {allowed})")
    return target
