"""The orchestrator's file tool: confined to the workspace; PDFs read back with a PDF reader."""

from __future__ import annotations

import os
from pathlib import Path

import pypdf
import pytest

from gaiamesh.orchestrated.files import Files, WorkspaceError


def test_create_read_append_overwrite_list(tmp_path: Path) -> None:
    files = Files(tmp_path / "ws")
    files.create("notes/a.txt", "one")
    files.append("notes/a.txt", " two")
    assert files.read("notes/a.txt") == "one two"
    with pytest.raises(WorkspaceError, match="already exists"):
        files.create("notes/a.txt", "again")
    files.overwrite("notes/a.txt", "three")
    assert files.read("notes/a.txt") == "three"
    assert files.list(".") == ["notes/"] and files.list("notes") == ["notes/a.txt"]
    with pytest.raises(WorkspaceError, match="no file 'missing.txt'"):
        files.read("missing.txt")


@pytest.mark.parametrize(
    ("path", "message"),
    [("/etc/passwd", "absolute path refused"), ("../outside.txt", "'..' is refused"),
     ("a/../../x", "'..' is refused"), ("~/x", "absolute path refused"), ("", "empty path")],
)  # fmt: skip
def test_paths_that_leave_the_workspace_are_refused(tmp_path: Path, path: str, message: str) -> None:
    with pytest.raises(WorkspaceError, match=message):
        Files(tmp_path / "ws").create(path, "x")
    assert not (tmp_path / "outside.txt").exists()


def test_a_symlink_out_of_the_workspace_is_refused(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "secret.txt").write_text("secret")
    os.symlink(tmp_path, ws / "escape")
    files = Files(ws)
    with pytest.raises(WorkspaceError, match="through a symlink"):
        files.read("escape/secret.txt")
    with pytest.raises(WorkspaceError, match="through a symlink"):
        files.overwrite("escape/secret.txt", "changed")
    assert (tmp_path / "secret.txt").read_text() == "secret"


def test_a_pdf_from_unicode_text_reads_back(tmp_path: Path) -> None:
    files = Files(tmp_path / "ws")
    text = "The museum in Zürich opened in 1887 – its café serves crème brûlée. " * 30
    files.create_pdf_from_text("out/summary.pdf", text, title="Résumé: the museum")
    reader = pypdf.PdfReader(tmp_path / "ws" / "out" / "summary.pdf")
    extracted = " ".join(page.extract_text() for page in reader.pages)
    flat = " ".join(extracted.split())
    assert "Résumé: the museum" in flat and "Zürich" in flat and "crème brûlée" in flat
    assert len(reader.pages) >= 1 and reader.metadata is not None and reader.metadata.title == "Résumé: the museum"
    with pytest.raises(WorkspaceError, match=r"must end in \.pdf"):
        files.create_pdf_from_text("summary.txt", text)
