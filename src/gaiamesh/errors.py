"""One error hierarchy. Every error the project raises on purpose is a :class:`GaiameshError` of
a named kind, whose message says what was wrong and what to do. What a kind means to a caller
is decided in one place each, from the kind and never from a message's words: the exit code of
a command (:data:`EXIT_CODES`, read by ``cli``), the HTTP status of a refusal
(:attr:`Refused.status`, read by ``service.app``), the status a run ends with when an error ends
it (:data:`RUN_STATUS`, read by every writer of ``metrics.json`` through :func:`run_status`; every
status a run can have is a :class:`RunStatus`).

Kinds that were ``ValueError`` or ``RuntimeError`` before stay so as well, so that code catching
those still catches them.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import ClassVar, TypeVar

T = TypeVar("T")


class GaiameshError(Exception):
    """The base of every error this project raises on purpose."""


# --- what the user gave ------------------------------------------------------------------------
class ConfigError(GaiameshError, ValueError):
    """A setting or a command-line value that cannot be used (AGENTS, TOPICS, a protocol's name)."""


class TaskError(GaiameshError, ValueError):
    """A task folder or task set that cannot be run, with the exact reason."""


# --- the wire ----------------------------------------------------------------------------------
class FrameError(GaiameshError, ValueError):
    """A frame that cannot be decoded or validated; the message says exactly why."""


class Unanswerable(GaiameshError, ValueError):
    """A request to an agent's own endpoint that its tool gives no meaning or cannot answer as
    sent (plain text to a tool that takes packets, a text query with no document to read); the
    message says what to send instead."""


# --- running -----------------------------------------------------------------------------------
class RunError(GaiameshError, RuntimeError):
    """A run, or a process it needs, could not be started or finished."""


class ConnectError(RunError):
    """An agent did not accept the relay's connection before the deadline, or is not the agent
    the configuration names. The message is ``reason``, then ``hint`` where there is advice for
    the likeliest cause in a user's run, kept apart so that a caller who reports what happened
    rather than what to do (bench-attacks' evidence of a rogue it put there) takes ``reason``."""

    def __init__(self, reason: str, hint: str = "") -> None:
        super().__init__(f"{reason}. {hint}" if hint else reason)
        self.reason, self.hint = reason, hint


class ForeignAgent(ConnectError):
    """What answers at an agent's address is not one of this run's agents: it did not prove the
    run's mesh token, or refused the relay's (its ``hint``: another stack or bench holds the port?)."""


class PortTaken(RunError):
    """A port a command needs for a process it starts is held by another program; the message
    names the port, its holder where it can be found, and the flag or variable that moves it."""


class AgentFailed(RunError):
    """An agent's tool failed on its input (the agent said so with an ``error`` packet)."""


class StorageError(RunError):
    """The run's results could not be written (disk full, folder unwritable); says where and why."""


class ModelError(GaiameshError, RuntimeError):
    """The model server could not answer (unknown model, bad request, ...)."""


class ModelUnreachable(ModelError, RunError):
    """The model server could not be reached (for the whole retry window, or at all)."""


class SubmitError(GaiameshError, RuntimeError):
    """The network service refused a run or could not be reached (``gaiamesh submit``)."""


class RunRefused(SubmitError):
    """The network service answered a run with a refusal; ``status`` is its HTTP status (409: the
    strategy's team is not running, 429: its queue is full, 422: a bad request)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class ServiceGone(SubmitError):
    """The network service went away while a client followed a run, and did not come back in
    time (``gaiamesh submit``: killed, or restarting for longer than the client waits)."""


class DeployError(GaiameshError, RuntimeError):
    """A docker command of ``gaiamesh swarm-up`` / ``swarm-down`` failed, or the swarm did not
    reach the state asked for in time (the message names the command or the service, and why)."""


class ToolError(GaiameshError, ValueError):
    """A tool refused its input or could not do its work (calculator, files, download, plans)."""


# --- the service's refusals: one HTTP status per kind --------------------------------------------
class Refused(GaiameshError, ValueError):
    """A request the network service does not carry out; ``status`` is the HTTP status that
    says why (each kind below has its own), ``headers`` what the answer carries besides."""

    status = 400
    headers: ClassVar[Mapping[str, str]] = {}


class Unauthorized(Refused):
    """Missing, forged or expired credentials (the message says which)."""

    status = 401


class Forbidden(Refused):
    status = 403


class NotFound(Refused):
    status = 404


class Conflict(Refused):
    """Not in this state: a session's illegal change, a finished run cancelled, a strategy
    whose team is not running."""

    status = 409


class TooLarge(Refused):
    status = 413


class Invalid(Refused):
    status = 422


class Busy(Refused):
    """The run queue is full."""

    status = 429


class Stopping(Refused):
    status = 503


class NoSpace(Refused):
    """Not enough room for what was asked: the results folder is full or unwritable, or a
    stream's team would not fit in the memory the service's container may use (the message
    gives the figures)."""

    status = 507


# The exit code of a command that ends with an error of each kind (the most specific kind wins):
# 2 for what the user gave (fix the input and try again), 1 for every other kind (a run or a
# service that failed).
EXIT_CODES: dict[type[GaiameshError], int] = {ConfigError: 2, TaskError: 2, ServiceGone: 3, GaiameshError: 1}


class RunStatus(StrEnum):
    """Every status a run can end with, as ``metrics.json``'s ``status`` spells it: the one table
    of them. ``RUNNING``: the run had not ended when it was written (a relay cut short)."""

    OK = "ok"
    RUNNING = "running"
    TIMEOUT = "timeout"
    AGENT_DEAD = "agent_dead"
    AGENT_ERROR = "agent_error"
    CONNECT_FAILED = "connect_failed"
    MODEL_UNREACHABLE = "model_unreachable"
    MODEL_ERROR = "model_error"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"  # the service stopped while the run was queued or in flight
    STORAGE_ERROR = "storage_error"
    FRAME_LOST = "frame_lost"  # network faults (or a protocol's client) lost every copy of a frame


# The status a run ends with when an error of each kind ends it (the most specific kind wins), in
# ``metrics.json``'s ``status``: the relay, a local run that could not start, the baseline and the
# service all read it here. Statuses that no error causes (ok, timeout, cancelled, ...) are the
# relay core's own.
RUN_STATUS: dict[type[GaiameshError], RunStatus] = {
    ModelUnreachable: RunStatus.MODEL_UNREACHABLE,
    ModelError: RunStatus.MODEL_ERROR,
    AgentFailed: RunStatus.AGENT_ERROR,
    StorageError: RunStatus.STORAGE_ERROR,
    ConnectError: RunStatus.CONNECT_FAILED,
    GaiameshError: RunStatus.FAILED,
}

# How each kind introduces itself on the command line.
LABELS: dict[type[GaiameshError], str] = {
    ConfigError: "bad configuration",
    TaskError: "bad task",
    ModelUnreachable: "model server unreachable",
    ModelError: "model server error",
    StorageError: "cannot write the results",
    AgentFailed: "agent failed",
    ForeignAgent: "not this run's agent",
    ConnectError: "cannot reach the agents",
    PortTaken: "port taken",
    RunError: "run failed",
    SubmitError: "submit",
    DeployError: "swarm",
    Refused: "refused",
    ToolError: "tool error",
    FrameError: "bad frame",
    Unanswerable: "bad request",
    GaiameshError: "error",
}


def _lookup(table: Mapping[type[GaiameshError], T], exc: GaiameshError) -> T:
    """``table``'s entry for the most specific kind of ``exc`` (every table has the base)."""
    for kind in type(exc).__mro__:
        if kind in table:
            return table[kind]  # type: ignore[index]
    return table[GaiameshError]


def exit_code(exc: GaiameshError) -> int:
    """The exit code a command ends with on ``exc``."""
    return _lookup(EXIT_CODES, exc)


def run_status(exc: GaiameshError) -> RunStatus:
    """The status of a run that ``exc`` ended."""
    return _lookup(RUN_STATUS, exc)


def label(exc: GaiameshError) -> str:
    """The words a command puts before ``exc``'s message."""
    return _lookup(LABELS, exc)
