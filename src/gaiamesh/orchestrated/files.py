"""``file_system``: the orchestrator's files, confined to the task's workspace.

Create, read, append, overwrite and list files, and write a PDF from text
(``create_pdf_from_text``, with ``fpdf2`` and the bundled DejaVu Sans so any Unicode text
prints). A path is always relative to the workspace: an absolute path, a ``..`` component, or a
symlink that leads out of it is refused with a message that says which.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from ..errors import ToolError

FONT = Path(__file__).parent / "fonts" / "DejaVuSans.ttf"
MAX_FILE_BYTES = 1_048_576  # what one operation may write or read


class WorkspaceError(ToolError):
    """A file operation refused or failed, with the reason."""


class Files:
    """File operations under ``root`` (created on first use)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, relative: str) -> Path:
        """``relative`` inside the workspace, or :class:`WorkspaceError`."""
        if not relative or not relative.strip():
            raise WorkspaceError("empty path")
        pure = PurePosixPath(relative.replace("\\", "/"))
        if pure.is_absolute() or relative.startswith("~"):
            raise WorkspaceError(f"absolute path refused: {relative!r} (paths are relative to the workspace)")
        if ".." in pure.parts:
            raise WorkspaceError(f"path leaves the workspace: {relative!r} ('..' is refused)")
        self.root.mkdir(parents=True, exist_ok=True)
        root = self.root.resolve()
        target = (root / pure).resolve()  # follows symlinks: one that points outside is caught here
        if target != root and root not in target.parents:
            raise WorkspaceError(f"path leaves the workspace through a symlink: {relative!r}")
        return target

    def _text(self, content: str) -> str:
        if len(content.encode()) > MAX_FILE_BYTES:
            raise WorkspaceError(f"content too large ({len(content.encode())} bytes > {MAX_FILE_BYTES})")
        return content

    def create(self, relative: str, content: str) -> str:
        target = self.path(relative)
        if target.exists():
            raise WorkspaceError(f"{relative!r} already exists (use overwrite or append)")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(self._text(content), encoding="utf-8")
        return relative

    def overwrite(self, relative: str, content: str) -> str:
        target = self.path(relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(self._text(content), encoding="utf-8")
        return relative

    def append(self, relative: str, content: str) -> str:
        target = self.path(relative)
        if target.exists() and target.stat().st_size + len(content.encode()) > MAX_FILE_BYTES:
            raise WorkspaceError(f"{relative!r} would grow past {MAX_FILE_BYTES} bytes")
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("a", encoding="utf-8") as f:
            f.write(self._text(content))
        return relative

    def read(self, relative: str) -> str:
        target = self.path(relative)
        if not target.is_file():
            raise WorkspaceError(f"no file {relative!r} in the workspace")
        if target.stat().st_size > MAX_FILE_BYTES:
            raise WorkspaceError(f"{relative!r} is too large to read ({target.stat().st_size} bytes)")
        try:
            return target.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise WorkspaceError(f"{relative!r} is not UTF-8 text ({exc.reason})") from exc

    def list(self, relative: str = ".") -> list[str]:
        target = self.path(relative)
        if not target.is_dir():
            raise WorkspaceError(f"no folder {relative!r} in the workspace")
        root = self.root.resolve()
        return sorted(str(p.relative_to(root)) + ("/" if p.is_dir() else "") for p in target.iterdir())

    def create_pdf_from_text(self, relative: str, text: str, title: str = "") -> str:
        """A PDF of ``text`` (with ``title`` as its heading) at ``relative``."""
        from fpdf import FPDF  # imported here: only the orchestrator writes PDFs

        if not relative.lower().endswith(".pdf"):
            raise WorkspaceError(f"a PDF's name must end in .pdf, not {relative!r}")
        target = self.path(relative)
        pdf = FPDF()
        pdf.set_title(title or target.stem)
        pdf.add_font("DejaVu", fname=str(FONT))
        pdf.add_page()
        if title:
            pdf.set_font("DejaVu", size=16)
            pdf.multi_cell(0, 10, self._text(title))
            pdf.ln(4)
        pdf.set_font("DejaVu", size=11)
        pdf.multi_cell(0, 6, self._text(text) or " ")
        target.parent.mkdir(parents=True, exist_ok=True)
        pdf.output(str(target))
        return relative
