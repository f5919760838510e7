"""The items of a stream, read from a JSONL file one line at a time (ProtocolBench's
``top1000_simplified.jsonl``: one ``{"id", "q"}`` a line), so that a file of any length is
streamed within bounded memory. A line that cannot be an item is a :class:`TaskError` naming
the file and the line; nothing after a bad line is dispatched, and nothing before it is lost
(the items already read are the caller's)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import TaskError

# An item is a question, or a task's question with its (short) document: a longer line is
# refused, not read whole.
MAX_LINE_BYTES = 64 * 1024
BOM = b"\xef\xbb\xbf"


class StreamItem(BaseModel):
    """One item of a stream: its id and its question (``q``, as ProtocolBench names it); an
    item of one of our task sets also has its document and its gold answers (then it is scored)."""

    model_config = ConfigDict(extra="ignore", frozen=True)  # a data set's other fields are its own

    id: str = Field(min_length=1, max_length=200)
    q: str = Field(min_length=1, max_length=8000)
    doc: str | None = Field(default=None, max_length=MAX_LINE_BYTES)
    answers: tuple[str, ...] = ()

    def line(self) -> str:
        """The item as one JSONL line (what the coordinator reads back from its ``doc_init``)."""
        return self.model_dump_json(exclude_defaults=True)


def read_items(path: Path, limit: int = 0) -> Iterator[StreamItem]:
    """The items of ``path`` in order (``limit``: the first N, 0 for all). An id seen twice, an
    empty file, a line that is not a JSON object of ``id`` and ``q``: a :class:`TaskError`."""
    try:
        f = path.open("rb")
    except OSError as exc:
        raise TaskError(f"{path}: cannot read the stream's items ({exc.strerror})") from exc
    with f:
        yield from items_of(f, str(path), limit)


def items_of(lines: Iterable[bytes], where: str, limit: int = 0) -> Iterator[StreamItem]:
    """The items of JSONL ``lines`` (a file, or the coordinator's ``doc_init``); ``where`` names
    them in errors."""
    seen: set[str] = set()  # ids only: 1,000,000 of them are tens of MB, not the file
    count = 0
    for number, raw in enumerate(lines, start=1):
        if number == 1:
            raw = raw.removeprefix(BOM)  # ProtocolBench's file starts with one (it reads utf-8-sig)
        if not raw.strip():
            continue
        item = _item(where, number, raw)
        if item.id in seen:
            raise TaskError(f"{where}:{number}: id {item.id!r} is given twice (each item is answered once)")
        seen.add(item.id)
        yield item
        count += 1
        if limit and count >= limit:
            return
    if count == 0:
        raise TaskError(f'{where}: no items (one JSON object a line, with "id" and "q")')


def _item(path: str, number: int, raw: bytes) -> StreamItem:
    where = f"{path}:{number}"
    if len(raw) > MAX_LINE_BYTES:
        raise TaskError(f"{where}: a line of {len(raw)} bytes (at most {MAX_LINE_BYTES}): one item a line")
    try:
        value = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TaskError(f'{where}: not JSON ({exc}); one JSON object a line, with "id" and "q"') from exc
    if not isinstance(value, dict):
        raise TaskError(f'{where}: a JSON {type(value).__name__}, not an object with "id" and "q"')
    if isinstance(value.get("id"), int) and not isinstance(value.get("id"), bool):
        value = {**value, "id": str(value["id"])}  # MS MARCO's ids are numbers in some copies
    try:
        return StreamItem.model_validate(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "the line"
        raise TaskError(f"{where}: {field}: {first['msg']}") from exc
