"""A task folder or a document sent on standard input, for a command that runs where the user's
files are not: ``gaiamesh submit`` inside the ``network`` container sees the container's files,
never the host's. ``--task -`` reads a task folder packed as a tar (``tar -C FOLDER -c .``, or
``tar -c FOLDER``, plain or compressed) and ``--document -`` a UTF-8 text.

The archive is read in memory and nothing is written to disk (the container's file system is
read-only). Only regular files and folders are accepted, each inside the folder: a link, a
device, an absolute path or a ``..`` is refused with the name it came with, and so is more than
:data:`MAX_BYTES`, packed or unpacked."""

from __future__ import annotations

import io
import tarfile
import zlib
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from ..errors import TaskError
from .folder import Task, parse_task

# A task folder is a document and its answers (the service takes documents up to MAX_DOC_BYTES).
MAX_BYTES = 16 * 1024 * 1024
NEEDED = ("doc.txt", "ground_truth.json")
HOW = "pack a task folder with: tar -C FOLDER -c . | gaiamesh submit --task -"


def read_stdin(stream: BinaryIO, flag: str, limit: int = MAX_BYTES) -> bytes:
    """Everything on ``stream`` (standard input), at most ``limit`` bytes; ``flag`` (the option
    that asked for it) begins each error."""
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise TaskError(f"{flag}: more than {limit} bytes on standard input (at most {limit // 2**20} MiB)")
    if not data:
        raise TaskError(f"{flag}: nothing on standard input; send a file with '< FILE' or a pipe")
    return data


def document_from(data: bytes, flag: str = "--document -") -> str:
    """The document text sent on standard input."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TaskError(f"{flag}: the document on standard input is not UTF-8 text ({exc.reason})") from exc
    if "\x00" in text:  # UTF-8 allows NUL, text does not: a binary file, or a tar (whose headers are ASCII)
        raise TaskError(f"{flag}: the document on standard input holds NUL bytes, so it is not text "
                        f"(a task folder packed as a tar goes with --task -)")  # fmt: skip
    if not text.strip():
        raise TaskError(f"{flag}: the document on standard input is empty")
    return text


def task_from_tar(data: bytes, flag: str = "--task -", limit: int = MAX_BYTES) -> Task:
    """The task folder packed in ``data``, checked as :func:`~.folder.load_task` checks a folder.
    Named after the archive's one top folder (``tar -c FOLDER``), else ``document``."""
    files = _files(data, flag, limit)
    files, top = _without_top(files)
    for needed in NEEDED:
        if needed not in files:
            held = ", ".join(sorted(files)) or "no file"
            raise TaskError(f"{flag}: the task folder on standard input has no {needed} (it holds {held}); "
                            f"a task folder holds {' and '.join(NEEDED)}")  # fmt: skip
    return parse_task(top or "document", files["doc.txt"], files["ground_truth.json"], flag, Path(top or "-"))


def _files(data: bytes, flag: str, limit: int) -> dict[str, bytes]:
    """Each regular file of the archive, by its path inside the folder."""
    try:
        tar = tarfile.open(fileobj=io.BytesIO(data), mode="r:*")
    except tarfile.ReadError as exc:  # its message lists each method tarfile tried
        raise TaskError(
            f"{flag}: standard input is not a tar archive; {HOW} (a text file goes with --document -)"
        ) from exc
    try:
        with tar:
            members = tar.getmembers()
            for member in members:
                _check(member, flag)
            if sum(m.size for m in members) > limit:
                raise TaskError(f"{flag}: the archive on standard input unpacks to more than {limit} bytes")
            return {_relative(m): _read(tar, m) for m in members if m.isfile()}
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise TaskError(f"{flag}: the tar archive on standard input is cut short or damaged ({exc})") from exc


def _check(member: tarfile.TarInfo, flag: str) -> None:
    path = PurePosixPath(member.name)
    if path.is_absolute() or ".." in path.parts:
        raise TaskError(f"{flag}: the archive names {member.name!r}, outside the task folder; {HOW}")
    if member.issym() or member.islnk():
        raise TaskError(f"{flag}: the archive holds the link {member.name!r}; links are not sent "
                        f"(tar -h packs the file a link points to)")  # fmt: skip
    if not (member.isfile() or member.isdir()):
        raise TaskError(f"{flag}: the archive holds {member.name!r}, which is not a file or a folder")


def _relative(member: tarfile.TarInfo) -> str:
    return "/".join(p for p in PurePosixPath(member.name).parts if p != ".")


def _read(tar: tarfile.TarFile, member: tarfile.TarInfo) -> bytes:
    source = tar.extractfile(member)
    if source is None:  # a regular file always has its data; a truncated archive says so here
        raise tarfile.TarError(f"no data for {member.name!r}")
    with source:
        return source.read()


def _without_top(files: dict[str, bytes]) -> tuple[dict[str, bytes], str | None]:
    """``tar -c FOLDER`` puts every file under ``FOLDER/``: the files inside it, and its name."""
    tops = {name.split("/", 1)[0] for name in files}
    if len(tops) != 1 or NEEDED[0] in files or not all("/" in name for name in files):
        return files, None
    top = tops.pop()
    return {name.split("/", 1)[1]: blob for name, blob in files.items()}, top
