"""A frame flood at the relay (bounded: a few seconds) from an agent process, while the other
agents answer with the real model's recorded answers, replayed at their recorded pace: every bad frame is rejected with its reason and counted,
none is lost, the honest run ends ``ok`` and the counters equal the frame log."""

from __future__ import annotations

from pathlib import Path

import pytest

from gaiamesh.bench.storms.flood import REJECTED_AS, run_flood
from gaiamesh.settings import load_settings
from gaiamesh.tasks import load_task

from ..conftest import TASKS

pytestmark = [pytest.mark.e2e, pytest.mark.model]


def test_a_flood_of_good_and_bad_frames_is_counted_and_the_honest_run_answers(
    recorded: Path, tmp_path: Path
) -> None:
    settings = load_settings(llm_backend="replay", replay_from=recorded, replay_pace="recorded", run_timeout=120)
    result = run_flood(settings, load_task(TASKS / "solar-farm"), tmp_path / "flood", seconds=3.0)
    calm, flood = result["calm"], result["flood"]
    assert calm["status"] == "ok" and calm["rejected_cnt"] == 0 and calm["audit_ok"]
    assert flood["status"] == "ok" and flood["audit_ok"]
    sent = flood["sent"]
    assert flood["sent_total"] > 300  # a flood, not a trickle
    assert flood["logged_from_flooder"] == flood["sent_total"]  # nothing it sent went unrecorded
    assert not flood["rejected_unexplained"], flood["rejected_unexplained"]
    assert flood["rejected"] == {kind: sent[kind] for kind in REJECTED_AS}  # each bad frame, for its reason
    assert flood["accepted_from_flooder"] == sent["valid"] + sent["final"]
    assert flood["rejected_cnt"] == sum(sent[kind] for kind in REJECTED_AS)
    assert flood["honest_doc_to_triples_ms"] is not None  # the honest agents got through
    assert (tmp_path / "flood" / "flood.json").is_file() and "| frames per second" in (
        tmp_path / "flood" / "flood.md"
    ).read_text()
