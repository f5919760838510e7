"""docs/architecture.md's layout against the tree as it is when the test runs: every room (a
folder of modules under src/gaiamesh), every module, every Settings part, every services/ and
tests/ folder is named in it, and it names nothing that is gone. A room or a module added without
a line in the layout, or removed with its line left, fails here with what to write."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "gaiamesh"
DOC = ROOT / "docs" / "architecture.md"
# A line of the layout that starts an entry of src/gaiamesh: "  cli/ ..." or "  errors.py ...".
ENTRY = re.compile(r"^  (\w+)(/|\.py)(\s|$)")
MODULE = re.compile(r"(?<![\w/.-])(\w+)\.py\b")
FOLDER = re.compile(r"(?<![\w/.-])(\w+)/(?=[\s,;:)]|$)")  # "cli/", not "I/O" or "plan/execute"


@dataclass
class Layout:
    entries: dict[str, str] = field(default_factory=dict)  # "cli/" or "errors.py" -> its text
    outside: str = ""  # the lines about the repository around src/gaiamesh


def layout() -> Layout:
    text = DOC.read_text()
    section = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```", 2)[1]
    found, current = Layout(), None
    for line in block.splitlines():
        if (m := ENTRY.match(line)) is not None:
            current = m[1] + m[2]
            found.entries[current] = line[m.end(2) :]
        elif line[:1].strip():  # back at the left margin: the repository again
            current = None
            found.outside += line + "\n"
        elif current is not None:
            found.entries[current] += "\n" + line
        else:
            found.outside += line + "\n"
    return found


def modules(room: Path) -> list[Path]:
    """The room's module files, its sub-rooms' too (``__init__.py`` and ``__main__.py`` are
    the package's own: not named)."""
    return sorted(
        p for p in room.rglob("*.py") if "__pycache__" not in p.parts and not (p.stem.startswith("__") and p.stem.endswith("__"))
    )


def rooms() -> list[Path]:
    return sorted(p for p in SRC.iterdir() if p.is_dir() and p.name != "__pycache__" and modules(p))


def test_every_room_and_module_is_in_the_layout() -> None:
    entries = layout().entries
    missing: list[str] = []
    for room in rooms():
        text = entries.get(f"{room.name}/")
        if text is None:
            missing.append(f"the room src/gaiamesh/{room.name}/ (an entry '  {room.name}/  <what it holds>')")
            continue
        words = set(MODULE.findall(text)), set(FOLDER.findall(text))
        for module in modules(room):
            rel = module.relative_to(room)
            for sub in rel.parts[:-1]:
                if sub not in words[1]:
                    missing.append(f"src/gaiamesh/{room.name}/{'/'.join(rel.parts[: rel.parts.index(sub) + 1])}/ under {room.name}/")
            if module.stem not in words[0]:
                missing.append(f"src/gaiamesh/{room.name}/{rel} ('{module.name}' under {room.name}/)")
    for module in sorted(SRC.glob("*.py")):
        if module.name not in ("__init__.py", "__main__.py") and module.name not in entries:
            missing.append(f"src/gaiamesh/{module.name} (an entry '  {module.name}  <what it does>')")
    missing = list(dict.fromkeys(missing))
    assert not missing, "docs/architecture.md's layout does not name:\n  " + "\n  ".join(missing)


def test_every_settings_part_is_in_the_layout() -> None:
    trees = [ast.parse(module.read_text()) for module in sorted((SRC / "settings").glob("*.py"))]
    parts = [
        n.name for tree in trees for n in tree.body
        if isinstance(n, ast.ClassDef) and n.name.endswith("Settings") and n.name != "Settings"
    ]  # fmt: skip
    assert parts  # the reading below found the parts at all
    said = layout().entries.get("settings/", "")
    missing = [p for p in parts if not re.search(rf"\b{p}\b", said)]
    assert not missing, f"docs/architecture.md's layout, under settings/, does not name {', '.join(missing)}"


def test_every_services_and_tests_folder_is_in_the_layout() -> None:
    outside = layout().outside
    missing = [
        f"{top}/{p.name}/"
        for top in ("services", "tests")
        for p in sorted((ROOT / top).iterdir())
        if p.is_dir() and p.name != "__pycache__" and not re.search(rf"(?<![\w/]){top}/{p.name}\b", outside)
    ]
    assert not missing, "docs/architecture.md's layout does not name " + ", ".join(missing)


def test_the_layout_names_nothing_that_is_gone() -> None:
    found = layout()
    gone: list[str] = []
    for name, text in found.entries.items():
        path = SRC / name.rstrip("/")
        if not path.exists():
            gone.append(f"{name} (no src/gaiamesh/{name})")
            continue
        if path.is_file():
            continue
        files = {p.stem for p in modules(path)} | {p.stem for p in path.rglob("__*__.py")}
        folders = {p.name for p in path.rglob("*") if p.is_dir()}
        gone += [f"{m}.py under {name} (not in src/gaiamesh/{name})" for m in sorted(set(MODULE.findall(text)) - files)]
        gone += [f"{d}/ under {name} (no such folder in src/gaiamesh/{name})" for d in sorted(set(FOLDER.findall(text)) - folders)]
    for top, sub in re.findall(r"(?<![\w/])(services|tests)/([\w-]+)", found.outside):
        if not (ROOT / top / sub).is_dir():
            gone.append(f"{top}/{sub}")
    assert not gone, "docs/architecture.md's layout names what is not in the tree:\n  " + "\n  ".join(gone)
