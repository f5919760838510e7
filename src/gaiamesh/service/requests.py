"""What a run request asks for, read once: the task it names or carries (a bundled task, or a
document and a question), its gold answers, and the service's settings with its choices."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from ..errors import Invalid, NotFound, TooLarge
from ..mesh import native
from ..mesh.protocols import check
from ..settings import Settings
from ..tasks import Task, TaskError, load_task
from .models import RunRequest

_TASK_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


def task_of(request: RunRequest, settings: Settings, runs_dir: Path) -> Task:
    """The task ``request`` names or carries; raises :class:`~gaiamesh.errors.Refused` (NotFound,
    TooLarge, Invalid, UnknownProtocol)."""
    if request.protocol is not None:
        check(request.protocol)
    if (request.transport or settings.transport) == "native":
        native.check(request.protocol or settings.protocol, request.strategy or settings.strategy)
    if request.task is not None:
        return _bundled(request, settings)
    doc = request.document or ""
    size = len(doc.encode())
    if size > settings.max_doc_bytes:
        raise TooLarge(f"document is {size} bytes; MAX_DOC_BYTES is {settings.max_doc_bytes}")
    if not doc.strip():
        raise Invalid("the document is empty")
    answer, answers = golds(request)
    return Task(request.name or "document", doc, str(request.question), answer, runs_dir,
                tuple(request.history or ()), answers)  # fmt: skip


def _bundled(request: RunRequest, settings: Settings) -> Task:
    name = str(request.task)
    if not _TASK_NAME.match(name) or ".." in name:
        raise NotFound(f"no bundled task named {name!r}")
    folder = Path(settings.tasks_dir) / name
    if not folder.is_dir():
        raise NotFound(f"no bundled task named {name!r} in {settings.tasks_dir}")
    try:
        task = load_task(folder)
    except TaskError as exc:
        raise Invalid(f"bundled task {name!r} is broken: {exc}") from exc
    if request.question and request.question != task.question:
        task = Task(task.task_id, task.doc, request.question, "", task.path)  # the task's gold is not this one's
    if request.answer is not None or request.answers:
        answer, answers = golds(request)
        task = replace(task, answer=answer, answers=answers)
    return replace(task, history=tuple(request.history or ()))


def golds(request: RunRequest) -> tuple[str, tuple[str, ...]]:
    """A request's gold answers as :class:`Task`'s ``answer`` and ``answers`` (none: the run
    is not scored)."""
    found = tuple(dict.fromkeys(a.strip() for a in [request.answer or "", *(request.answers or [])] if a.strip()))
    return (found[0] if found else ""), (found if len(found) > 1 else ())


def settings_of(settings: Settings, request: RunRequest) -> Settings:
    """The service's settings with what ``request`` chose for its run."""
    options = {"protocol": request.protocol, "transport": request.transport, "routing": request.routing, "strategy": request.strategy,
               "rejoin_grace": request.rejoin_grace, "run_timeout": request.run_timeout}  # fmt: skip
    return settings.model_copy(update={k: v for k, v in options.items() if v is not None and v != ""})
