"""The one error hierarchy: every kind is a GaiameshError, each refusal has its own HTTP status,
and a command's exit code and words come from the kind, never from the message."""

from __future__ import annotations

import pytest

from gaiamesh import errors
from gaiamesh.errors import (
    ConfigError,
    ConnectError,
    ForeignAgent,
    GaiameshError,
    ModelUnreachable,
    Refused,
    RunError,
    StorageError,
    TaskError,
    exit_code,
    label,
)
from gaiamesh.mesh.protocols.base import ProtocolError
from gaiamesh.orchestrated.calculator import CalculatorError
from gaiamesh.service.auth import AuthError
from gaiamesh.service.sessions import IllegalTransition


def test_every_kind_the_project_raises_is_one_of_ours() -> None:
    for kind in (CalculatorError, ProtocolError, AuthError, IllegalTransition, StorageError, TaskError):
        assert issubclass(kind, GaiameshError), kind


def test_an_errors_reason_stands_apart_from_the_advice_its_message_ends_with() -> None:
    exc = ForeignAgent("what answers at :1 is not ours", "Another stack holds port 1? Stop it (make down)")
    assert str(exc) == "what answers at :1 is not ours. Another stack holds port 1? Stop it (make down)"
    assert exc.reason == "what answers at :1 is not ours" and exc.hint == "Another stack holds port 1? Stop it (make down)"
    plain = ConnectError("agent 0 not reachable")
    assert plain.reason == str(plain) == "agent 0 not reachable" and plain.hint == ""


def test_each_refusal_has_its_own_http_status() -> None:
    kinds = [k for k in vars(errors).values() if isinstance(k, type) and issubclass(k, Refused) and k is not Refused]
    statuses = [k.status for k in kinds]
    assert len(set(statuses)) == len(statuses) and all(400 <= s < 600 for s in statuses)
    assert AuthError("x").status == 401 and IllegalTransition("x").status == 409


@pytest.mark.parametrize(
    ("exc", "code", "words"),
    [
        (ConfigError("bad AGENTS entry"), 2, "bad configuration"),
        (TaskError("missing doc.txt"), 2, "bad task"),
        (ModelUnreachable("the words 'run failed' mean nothing here"), 1, "model server unreachable"),
        (RunError("model server is mentioned, and it is still a plain run error"), 1, "run failed"),
        (StorageError("disk full"), 1, "cannot write the results"),
        (CalculatorError("division by zero"), 1, "tool error"),
    ],
)
def test_exit_code_and_words_come_from_the_kind(exc: GaiameshError, code: int, words: str) -> None:
    assert (exit_code(exc), label(exc)) == (code, words)


def test_kinds_stay_the_builtin_errors_they_were() -> None:
    assert isinstance(TaskError("x"), ValueError) and isinstance(RunError("x"), RuntimeError)
    assert isinstance(ModelUnreachable("x"), RunError)
