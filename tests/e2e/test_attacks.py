"""The attack bench end to end: real agent processes, the relay, the attacker on real sockets,
under `json` (no defence of its own: the baseline that shows the attacks work) and `signed`,
in the clear and on their own wire (TRANSPORT=native: the attacker works on HTTP messages), `json` under mutual TLS
(WIRE_TLS=mtls, the certificates of a local CA); an A2A agent card
re-pointed on its way; all on the suite's one live recording (``recorded``: the model's answers replayed)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import ROOT, TASKS, free_port

pytestmark = [pytest.mark.e2e, pytest.mark.model]


def _bench(recorded: Path, out: Path, *args: str) -> list[dict[str, str]]:
    """``gaiamesh bench-attacks`` on the recording with ``args``; the rows of its attacks.csv."""
    proc = subprocess.run(
        [sys.executable, "-m", "gaiamesh", "bench-attacks", "--task", str(TASKS / "solar-farm"), *args, "--window", "2",
         "--run-timeout", "5", "--replay", str(recorded), "--ollama-host", f"http://127.0.0.1:{free_port()}",
         "--workspaces", str(out / "ws"), "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, env=dict(os.environ),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (out / "attacks.md").is_file() and (out / "attacks.png").stat().st_size > 0
    summary = json.loads((out / "attacks.json").read_text())["summary"]
    assert summary["frames_lost"] == summary["answers_changed"] == summary["audits_failed"] == 0
    assert summary["calm_not_ok"] == []
    return list(csv.DictReader((out / "attacks.csv").open()))


@pytest.fixture(scope="module")
def matrix(recorded: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], dict[str, str]]:
    # json and signed on both wires in the clear; json under mutual TLS (TLS acts alike under any
    # protocol: the unit tests judge a frame TLS took and the protocol inside refused)
    rows = _bench(recorded, tmp_path_factory.mktemp("attacks"), "--protocols", "json,signed", "--security", "none",
                  "--transports", "relay,native")  # fmt: skip
    rows += _bench(recorded, tmp_path_factory.mktemp("attacks-mtls"), "--protocols", "json", "--security", "mtls",
                   "--transports", "relay")  # fmt: skip
    return {(_column(r), r["attack"]): r for r in rows}


def _column(row: dict[str, str]) -> str:
    """The matrix's column name, as attacks.md heads it."""
    return (row["protocol"] + ("/native" if row["transport"] == "native" else "")
            + ("" if row["security"] == "none" else f"+{row['security']}"))  # fmt: skip


def test_on_a_plain_wire_the_tap_reads_the_document_and_the_answer(matrix: dict) -> None:
    for protocol in ("json", "signed"):  # signing is not encryption
        tap = matrix[(protocol, "tap")]
        assert tap["outcome"] == "succeeded" and "question yes, answer yes" in tap["evidence"]
        assert "document 0/" not in tap["evidence"]


def test_json_takes_what_signed_refuses(matrix: dict) -> None:
    for attack, reason in [("flip", "bad signature"), ("replay", "replayed"), ("late", "stale"),
                           ("downgrade", "unsigned frame")]:  # fmt: skip
        assert matrix[("signed", attack)]["outcome"] == "blocked", matrix[("signed", attack)]
        assert reason in matrix[("signed", attack)]["evidence"]
        if attack != "downgrade":
            assert matrix[("json", attack)]["outcome"] == "succeeded", matrix[("json", attack)]
    assert matrix[("json", "downgrade")]["outcome"] == "n/a"
    # the upgrade request re-offered as json: the relay's client refuses an answer it did not offer
    assert matrix[("signed", "fallback")]["outcome"] == "blocked", matrix[("signed", "fallback")]
    assert matrix[("signed", "fallback")]["status"] == "ok"


def test_admission_holds_under_both(matrix: dict) -> None:
    for protocol in ("json", "signed"):
        for attack in ("impersonate", "reuse", "observer"):
            assert matrix[(protocol, attack)]["outcome"] == "blocked", matrix[(protocol, attack)]
        replayed = matrix[(protocol, "handshake_replay")]
        assert replayed["outcome"] == "blocked" and "replayed" in replayed["evidence"]
        assert replayed["status"] == "ok"  # the run the handshake was stolen from went on
        # a proof the agent made for another protocol, handed back under this one: the proof binds it
        crossed = matrix[(protocol, "crossproof")]
        assert crossed["outcome"] == "blocked" and "made for another protocol" in crossed["evidence"], crossed
        assert crossed["status"] == "connect_failed" and crossed["frames_lost"] == "0"
    assert matrix[("json+mtls", "crossproof")]["outcome"] == matrix[("json/native", "crossproof")]["outcome"] == "n/a"


def test_under_mutual_tls_the_tap_reads_nothing_and_a_tampered_record_costs_a_reconnection(matrix: dict) -> None:
    for protocol in ("json+mtls",):
        tap = matrix[(protocol, "tap")]
        assert tap["outcome"] == "blocked" and "document 0/" in tap["evidence"] and "answer no" in tap["evidence"]
        for attack in ("flip", "truncate", "replay", "reorder"):
            cell = matrix[(protocol, attack)]
            assert cell["outcome"] == "blocked" and "TLS refused" in cell["evidence"], cell
            assert cell["status"] == "ok" and cell["answer_changed"] == "False"  # reached again, work sent again
        for attack in ("impersonate", "reuse"):
            assert "no certificate of this mesh's CA" in matrix[(protocol, attack)]["evidence"]
        assert "mutual TLS" in matrix[(protocol, "observer")]["evidence"]
        assert matrix[(protocol, "observer")]["outcome"] == "blocked"
    # TLS carries no time: a record held past the window is taken (a signed frame in it would be stale)
    assert matrix[("json+mtls", "late")]["outcome"] == "succeeded"


def test_on_their_own_wire_the_tap_reads_everything_and_only_signing_refuses_a_copy(matrix: dict) -> None:
    for protocol in ("json/native", "signed/native"):
        tap = matrix[(protocol, "tap")]
        assert tap["outcome"] == "succeeded" and "question yes, answer yes" in tap["evidence"], tap
        for attack in ("impersonate", "reuse", "handshake_replay", "observer"):
            assert matrix[(protocol, attack)]["outcome"] == "blocked", matrix[(protocol, attack)]
        assert matrix[(protocol, "truncate")]["outcome"] == "blocked"  # the client cannot read a cut answer
        assert "gave up on a frame" in matrix[(protocol, "truncate")]["evidence"]
    # json's endpoint works for whoever sends it a frame; signed's nonce cache takes each frame once
    assert matrix[("json/native", "replay")]["outcome"] == "succeeded"
    replayed = matrix[("signed/native", "replay")]
    assert replayed["outcome"] == "blocked" and "replayed" in replayed["evidence"], replayed
    assert matrix[("json/native", "poison")]["outcome"] == "n/a"  # a plain POST has no directory


def test_an_a2a_card_repointed_on_the_wire_is_refused_not_followed(recorded: Path, tmp_path: Path) -> None:
    (row,) = _bench(recorded, tmp_path, "--protocols", "a2a", "--transports", "native", "--attacks", "poison")
    # before the relay's client checked the card's origin, it followed the card to the attacker
    assert row["outcome"] == "blocked" and "names an interface at" in row["evidence"], row
    assert row["status"] == "connect_failed"  # named, and nothing went to the attacker
