"""A task folder packed as a tar and a document, on standard input (``gaiamesh submit --task -`` /
``--document -``): what the host's ``tar`` packs is read as the folder reads, and what is not a
plain file inside the folder is refused in our words."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from gaiamesh.errors import TaskError
from gaiamesh.tasks import load_task
from gaiamesh.tasks.packed import document_from, read_stdin, task_from_tar

from ...conftest import ROOT, free_port


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A task folder of the user's own, with more than the two files a task needs."""
    path = tmp_path / "harbour-ferry"
    (path / "notes").mkdir(parents=True)
    (path / "doc.txt").write_text(
        "The ferry ran from 1907.\r\nThe Eilean Dubh made its last crossing in 1982.\n"
    )
    (path / "ground_truth.json").write_text(json.dumps({"question": "Which vessel made the last crossing?",
                                                        "answers": ["Eilean Dubh", "the Eilean Dubh"]}))  # fmt: skip
    (path / "conversation.json").write_text("[]")
    (path / "notes" / "source.txt").write_text("council minutes")
    return path


def tar_of(*argv: str) -> bytes:
    """What the host's GNU tar writes to standard output."""
    return subprocess.run(["tar", *argv], capture_output=True, check=True).stdout


def packed(*members: tuple[tarfile.TarInfo, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for info, data in members:
            info.size = len(data) if info.isfile() else 0
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return buf.getvalue()


def member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


GOOD = [
    (member("doc.txt"), b"A document."),
    (member("ground_truth.json"), b'{"question": "q", "answer": "a"}'),
]


def test_a_folder_packed_by_tar_reads_as_the_folder_does(folder: Path) -> None:
    on_disk = load_task(folder)
    for argv, task_id in [(["-C", str(folder), "-c", "."], "document"),  # the folder's contents: unnamed
                          (["-C", str(folder.parent), "-c", folder.name], "harbour-ferry"),  # the folder itself
                          (["-C", str(folder.parent), "-cz", folder.name], "harbour-ferry")]:  # fmt: skip
        task = task_from_tar(tar_of(*argv))
        assert task.task_id == task_id, argv
        assert (task.doc, task.question, task.golds) == (on_disk.doc, on_disk.question, on_disk.golds), argv
    assert "\r" not in on_disk.doc  # CRLF reads as the folder's read_text reads it


@pytest.mark.parametrize(
    ("members", "message"),
    [
        ([*GOOD, (member("notes", tarfile.SYMTYPE, "/etc"), b"")], "holds the link 'notes'"),
        ([*GOOD, (member("copy.txt", tarfile.LNKTYPE, "doc.txt"), b"")], "holds the link 'copy.txt'"),
        ([(member("doc.txt", tarfile.SYMTYPE, "/etc/passwd"), b""), GOOD[1]], "holds the link 'doc.txt'"),
        ([*GOOD, (member("/etc/cron.d/x"), b"x")], "names '/etc/cron.d/x', outside the task folder"),
        ([*GOOD, (member("../../x"), b"x")], "names '../../x', outside the task folder"),
        ([*GOOD, (member("fifo", tarfile.FIFOTYPE), b"")], "'fifo', which is not a file or a folder"),
        ([*GOOD, (member("tty", tarfile.CHRTYPE), b"")], "'tty', which is not a file or a folder"),
        ([GOOD[1]], "has no doc.txt \\(it holds ground_truth.json\\)"),
        ([GOOD[0], (member("truth.json"), b"{}")], "has no ground_truth.json"),
        ([GOOD[0], (member("ground_truth.json"), b"{oops")], "--task -: ground_truth.json is not valid JSON"),
        ([(member("doc.txt"), b"\xff\xfe"), GOOD[1]], "--task -: doc.txt is not UTF-8"),
        ([(member("doc.txt"), b"  \n"), GOOD[1]], "--task -: doc.txt is empty"),
    ],
)
def test_what_is_not_a_plain_task_folder_is_refused(
    members: list[tuple[tarfile.TarInfo, bytes]], message: str
) -> None:
    with pytest.raises(TaskError, match=message):
        task_from_tar(packed(*members))


def test_not_a_tar_and_too_much_are_refused() -> None:
    with pytest.raises(TaskError, match="--task -: standard input is not a tar archive;.*--document -"):
        task_from_tar(b"The ferry ran from 1907.\n" * 40)
    whole = packed(*GOOD, (member("notes.txt"), b"x" * 5000))
    with pytest.raises(
        TaskError, match="--task -: the tar archive on standard input is cut short or damaged"
    ):
        task_from_tar(whole[:3000])
    with pytest.raises(TaskError, match="unpacks to more than 1000 bytes"):
        task_from_tar(packed(*GOOD, (member("big.bin"), b"x" * 2000)), limit=1000)
    with pytest.raises(TaskError, match="--task -: more than 10 bytes on standard input"):
        read_stdin(io.BytesIO(b"x" * 11), "--task -", limit=10)
    with pytest.raises(TaskError, match="--document -: nothing on standard input"):
        read_stdin(io.BytesIO(b""), "--document -")
    assert read_stdin(io.BytesIO(b"x" * 10), "--task -", limit=10) == b"x" * 10


def test_a_document_on_standard_input() -> None:
    assert document_from("Caf\u00e9 text\n".encode()) == "Caf\u00e9 text\n"
    with pytest.raises(TaskError, match="--document -: the document on standard input is not UTF-8 text"):
        document_from(b"\xff\xfe\x00")
    with pytest.raises(TaskError, match="--document -: .* NUL bytes, so it is not text .*--task -"):
        document_from(packed(*GOOD))  # a tar's headers are ASCII: UTF-8, and not a document
    with pytest.raises(TaskError, match="--document -: the document on standard input is empty"):
        document_from(b" \n\t")


def submit(*args: str, stdin: int | bytes) -> subprocess.CompletedProcess[str]:
    """`gaiamesh submit` against a port where no service answers: what it reads is checked before."""
    url = f"http://127.0.0.1:{free_port()}"
    env = {**os.environ, "GAIAMESH_ACCESS_KEY": "k"}
    kw: dict[str, object] = {"input": stdin.decode()} if isinstance(stdin, bytes) else {"stdin": stdin}
    return subprocess.run([sys.executable, "-m", "gaiamesh", "submit", "--url", url, *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60, **kw)  # type: ignore[call-overload]  # fmt: skip


def test_submit_reads_a_pipe_and_refuses_a_terminal() -> None:
    # /dev/stdin is a pipe here, not a regular file: it is read (and the run goes on to the service)
    proc = submit("--document", "/dev/stdin", "--question", "q", stdin=b"A document.\n")
    assert proc.returncode == 1 and "network service unreachable" in proc.stderr, proc.stderr
    main, tty = os.openpty()
    try:
        for flag in ("--document", "--task"):
            proc = submit(flag, "-", "--question", "q", stdin=tty)
            assert (
                proc.returncode == 2 and f"{flag} - reads standard input, which is a terminal" in proc.stderr
            )
            assert "Traceback" not in proc.stderr
    finally:
        os.close(main)
        os.close(tty)
    proc = submit("--task", "-", stdin=b"not a tar\n")
    assert proc.returncode == 2 and "--task -: standard input is not a tar archive" in proc.stderr, (
        proc.stderr
    )
