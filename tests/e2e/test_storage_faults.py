"""The disk under a run's results fills up while it runs (a real tmpfs, real agents, the real
model): the relay ends the run at once with a precise error, never sends a frame its log lacks,
leaves a log of whole records, and the same agents answer the next run."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from gaiamesh.agents.teams import lineup
from gaiamesh.errors import StorageError
from gaiamesh.evaluation.audit import audit
from gaiamesh.evaluation.finish import run_and_finish
from gaiamesh.evaluation.metrics import read_log
from gaiamesh.mesh.records import FrameRecord
from gaiamesh.mesh.relay import MeshNetwork
from gaiamesh.settings import load_settings
from gaiamesh.tasks import load_task

from ..conftest import TASKS, fill_disk, small_disk

pytestmark = [pytest.mark.e2e, pytest.mark.model]


def test_a_disk_that_fills_mid_run_ends_it_with_the_reason_and_loses_nothing(
    agents: tuple[str, Path], model_server: str, tmp_path: Path
) -> None:
    settings = load_settings(ollama_host=model_server, agents=agents[0], workspace_root=agents[1], run_timeout=120)
    task = load_task(TASKS / "solar-farm")
    seen: list[FrameRecord] = []

    with small_disk(tmp_path / "disk", "256k") as disk:

        def observe(item: object) -> None:
            if isinstance(item, FrameRecord):
                if not seen:
                    fill_disk(disk)  # the first batch (doc_init) is logged and sent; then the disk is full
                seen.append(item)

        net = MeshNetwork(settings, task, disk / "run", quiet=True, observer=observe, lineup=lineup(settings))
        started = time.monotonic()
        with pytest.raises(StorageError) as failed:
            asyncio.run(run_and_finish(net))
        took = time.monotonic() - started
        message = str(failed.value)
        assert "No space left on device" in message and "frames.jsonl" in message, message
        assert took < 60  # it ended at the failed write, not at RUN_TIMEOUT (120 s)
        assert net.core is not None and net.core.end is not None and net.core.end.status == "storage_error"
        # the log holds whole records only, and exactly the frames that were sent (write-ahead)
        logged = read_log(disk / "run" / "frames.jsonl")
        assert logged and [r.type for r in logged] == [r.type for r in seen]
        assert {r.type for r in logged} == {"doc_init"}

    # the agents are unharmed: the next run on a working disk is answered and audited
    again = asyncio.run(run_and_finish(MeshNetwork(settings, task, tmp_path / "again", quiet=True, lineup=lineup(settings))))
    assert again.status == "ok" and again.exact_match == 1
    assert all(a == b for _, a, b in audit(tmp_path / "again"))
