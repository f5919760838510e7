"""The flood's frames (bench/storms/flood.py): each bad kind is refused by the relay's own core for its
reason, every time it is sent (a signed kind is signed anew, so a copy is never refused as a replay)."""

from __future__ import annotations

from pathlib import Path

from gaiamesh.bench.storms.flood import FLOODER, KINDS, REJECTED_AS, frames
from gaiamesh.errors import FrameError
from gaiamesh.mesh.core import RelayCore
from gaiamesh.mesh.protocols import generate_keys, get_adapter


def test_each_kind_is_refused_for_its_own_reason_every_time(tmp_path: Path) -> None:
    keys = generate_keys(tmp_path, ["network", "0", "1", "2", FLOODER])
    core = RelayCore("run-1", get_adapter("signed", "network", keys), [("0", "search"), (FLOODER, "reason")],
                     max_frame_bytes=4096)  # fmt: skip
    makers = frames(keys, "run-1", 4096)
    assert set(makers) == set(KINDS)
    for _ in range(3):
        core._validate(FLOODER, makers["valid"]())  # taken each time
        for kind, reason in REJECTED_AS.items():
            try:
                core._validate(FLOODER, makers[kind]())
            except FrameError as exc:
                assert reason in str(exc), (kind, str(exc))
            else:
                raise AssertionError(f"{kind} was taken")
