"""``gaiamesh run`` end to end on 127.0.0.1: real processes, real WebSockets, real model."""

from __future__ import annotations

import base64
import csv
import json
import os
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from gaiamesh.agents.teams import tools_of
from gaiamesh.evaluation.metrics import totals_from_log
from gaiamesh.mesh.protocols import canonical_json

from ..conftest import ROOT, TASKS, free_port, free_port_block, recorded_metrics

pytestmark = [pytest.mark.e2e, pytest.mark.model]

SEED_FIELDS = ["bytes_tx", "bytes_rx", "pkt_cnt", "header_overhead", "token_sum", "elapsed_ms",
               "quality_score", "exact_match", "rouge_l"]  # fmt: skip
EXTRA_FIELDS = ["status", "task_id", "question", "answer", "prediction", "protocol", "model", "llm_ms",
                "gaia_match", "agents", "rejected_cnt", "routing", "run_id"]  # fmt: skip


def gaiamesh(*args: str, timeout: float = 300, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gaiamesh", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout,
        env={**os.environ, **(env or {})},
    )  # fmt: skip



def test_run_starts_everything_scores_and_archives(tmp_path: Path) -> None:
    port = free_port()  # no model server answers here: `run` must start (and stop) the bundled one
    out = tmp_path / "run"
    proc = gaiamesh(
        "run", str(TASKS / "solar-farm"), "--out", str(out), "--base-port", str(free_port_block(4)),
        "--ollama-host", f"http://127.0.0.1:{port}", "--workspaces", str(tmp_path / "ws"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "run summary" in proc.stdout or "gaiamesh run" in proc.stdout
    m = json.loads((out / "metrics.json").read_text())
    for field in SEED_FIELDS + EXTRA_FIELDS:
        assert field in m, field
    assert m["status"] == "ok" and m["error"] is None and m["task_id"] == "solar-farm"
    assert m["protocol"] == "json" and m["model"] == "gemma3:270m" and m["prediction"]
    assert 0.0 <= m["quality_score"] <= 1.0
    # MODEL_KIND=auto: base, from /api/show's template (our server's is raw); SCHEMAS=auto holds
    # nothing to a schema on a base model; ANSWER_CHOICE=auto on our /api/score (one pass over
    # the text): likelihood, its probe's time recorded
    assert (m["backend"], m["model_kind"], m["schemas"]) == ("ollama", "base", [])
    assert m["answer_choice"] == "likelihood" and m["made_by"]["answer"] == "model"
    assert all(s["choice"] == "likelihood" and s["passage_ms"] > 0 for s in m["scoring"].values()) and m["scoring"]
    assert m["quality_score"] == pytest.approx((m["exact_match"] + m["rouge_l"]) / 2)
    assert m["elapsed_ms"] > 0 and 0 < m["llm_ms"] <= m["elapsed_ms"] * 1.05
    # the agents were forked from one warm process (AGENT_START=fork, the default), and each logged
    # in its own file as a new interpreter would have: its INFO lines, its tool named
    assert (out / "logs" / "zygote.log").is_file()
    for node, tool in enumerate(tools_of("pipeline")):
        assert f"agent {node} ({tool}) listening on ws://" in (out / "logs" / f"agent-{node}.log").read_text()
    # counters agree with the frame log, line by line
    totals = totals_from_log(out / "frames.jsonl")
    for key, value in totals.items():
        assert m[key] == value, key
    lines = [json.loads(x) for x in (out / "frames.jsonl").read_text().splitlines()]
    assert [x["type"] for x in lines] == ["doc_init", "search_docs", "events", "triples", "data_event"]
    assert lines[-1]["tag"] == "final_answer"
    assert m["bytes_rx"] == sum(x["size"] for x in lines if x["src"] != "network")
    # tokens are the model's own counts, reported by every agent (search's reranking reads too)
    per_agent = {a["tool"]: a["token_used"] for a in m["agents"].values()}
    assert min(per_agent.values()) > 0
    assert m["token_sum"] == sum(per_agent.values())
    with tarfile.open(out / "run_artifacts.tar.gz") as tar:
        names = set(tar.getnames())
        memory = json.load(tar.extractfile("workspaces/3/memory.json"))  # type: ignore[arg-type]
    for node in "0123":
        assert {f"workspaces/{node}/agent.log", f"workspaces/{node}/memory.json"} <= names
    assert {"frames.jsonl", "metrics.json", "config.json"} <= names
    assert memory["answer"] == m["prediction"]
    # `gaiamesh audit` agrees, and notices a doctored metrics.json
    assert gaiamesh("audit", str(out), timeout=60).returncode == 0
    (out / "metrics.json").write_text(json.dumps({**m, "bytes_tx": m["bytes_tx"] - 1}))
    doctored = gaiamesh("audit", str(out), timeout=60)
    assert doctored.returncode == 1 and "bytes_tx disagree with the frame log" in doctored.stderr
    # everything it started is stopped
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"http://127.0.0.1:{port}/api/version", timeout=2)


def test_baseline_is_scored_the_same_way(tmp_path: Path, model_server: str) -> None:
    proc = gaiamesh(
        "baseline", str(TASKS / "solar-farm"), "--out", str(tmp_path), "--ollama-host", model_server
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    m = json.loads((tmp_path / "metrics.json").read_text())
    assert m["mode"] == "baseline" and m["token_sum"] > 0
    assert m["quality_score"] == pytest.approx((m["exact_match"] + m["rouge_l"]) / 2)


def test_bad_task_fails_before_anything_starts(tmp_path: Path) -> None:
    (tmp_path / "doc.txt").write_text("text")
    (tmp_path / "ground_truth.json").write_text('{"question": " ", "answer": "a"}')
    proc = gaiamesh("run", str(tmp_path), "--out", str(tmp_path / "out"), timeout=60)
    assert proc.returncode == 2
    assert "ground_truth.json needs a non-empty 'question'" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_unknown_protocol_is_a_clear_error(tmp_path: Path) -> None:
    proc = gaiamesh("relay", "--protocol", "smoke-signals", timeout=60)
    assert proc.returncode == 2 and "unknown protocol 'smoke-signals'" in proc.stderr


# The wire under every protocol and both strategies, on the real model's recorded answers (a
# replay): the answer is the live one, only the bytes differ. One bench, one team per strategy
# speaking every protocol (as a user's bench does), so each protocol costs its run, not a team's start-up.
PROTOCOLS = ["json", "binary", "compressed", "signed", "a2a", "anp", "acp", "agora"]


@pytest.fixture(scope="module")
def every_protocol(tmp_path_factory: pytest.TempPathFactory, recorded: Path) -> Path:
    tmp = tmp_path_factory.mktemp("every-protocol")
    (tmp / "tasks").mkdir()
    (tmp / "tasks" / "solar-farm").symlink_to(TASKS / "solar-farm")
    proc = gaiamesh(
        "bench", "--tasks", str(tmp / "tasks"), "--protocols", ",".join(PROTOCOLS), "--repeat", "1",
        "--strategies", "pipeline,orchestrated", "--out", str(tmp / "bench"), "--replay", str(recorded),
        "--base-port", str(free_port_block(12)), "--workspaces", str(tmp / "ws"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return tmp / "bench"


@pytest.mark.parametrize("protocol", PROTOCOLS[1:])
def test_every_protocol_end_to_end(every_protocol: Path, recorded: Path, protocol: str) -> None:
    out = next((every_protocol / "runs" / f"pipeline-{protocol}").iterdir())
    m = json.loads((out / "metrics.json").read_text())
    assert m["status"] == "ok" and m["protocol"] == protocol and m["rejected_cnt"] == 0
    live = recorded_metrics(recorded, "solar-farm")
    assert m["backend"] == "replay" and m["prediction"] == live["prediction"]
    assert m["token_sum"] == int(live["token_sum"]) and m["bytes_tx"] != int(live["bytes_tx"])
    assert m["header_overhead"] > 0
    totals = totals_from_log(out / "frames.jsonl")
    for key, value in totals.items():
        assert m[key] == value, key
    if protocol in SDK_READERS:
        sdk_reads_every_frame(protocol, out, every_protocol / "keys" / "pipeline-full")


def _read_anp(blob: bytes, keys: Path) -> dict[str, Any]:
    from anp.proof import Rfc9421OriginProofVerificationOptions, verify_rfc9421_origin_proof
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from gaiamesh.mesh.protocols.anp.envelope import did_document

    public = json.loads((keys / "public.json").read_text())  # the team's keys
    docs = [did_document(n, Ed25519PublicKey.from_public_bytes(bytes.fromhex(h))) for n, h in public.items()]
    frame = json.loads(blob)
    params = frame["params"]
    (doc,) = [d for d in docs if d["id"] == params["meta"]["sender_did"]]
    verify_rfc9421_origin_proof(
        params["auth"]["origin_proof"], frame["method"], params["meta"], params["body"], did_document=doc,
        options=Rfc9421OriginProofVerificationOptions(expected_signer_did=doc["id"]),
    )  # fmt: skip
    return dict(params["body"]["payload"])


def _read_acp(blob: bytes, keys: Path) -> dict[str, Any]:
    from acp_sdk.models import RunCreateRequest

    request = RunCreateRequest.model_validate_json(blob)
    ((part,),) = [m.parts for m in request.input]
    assert part.content_type == "application/json" and part.content is not None
    packet: dict[str, Any] = json.loads(part.content)
    assert request.agent_name == packet["type"]
    return packet


def _read_agora(blob: bytes, keys: Path) -> dict[str, Any]:
    from agora.utils import compute_hash, download_and_verify_protocol

    message = json.loads(blob)
    (source,) = message["protocolSources"]
    document = download_and_verify_protocol(message["protocolHash"], source)  # a data: URI
    assert document is not None and compute_hash(document) == message["protocolHash"]
    packet: dict[str, Any] = json.loads(message["body"])
    return packet


SDK_READERS: dict[str, Callable[[bytes, Path], dict[str, Any]]] = {
    "anp": _read_anp, "acp": _read_acp, "agora": _read_agora,
}  # fmt: skip


def sdk_reads_every_frame(protocol: str, out: Path, keys: Path) -> None:
    """Every frame the run carried, read back with the protocol's own SDK (not our adapter);
    each frame's header size is its length minus the packet's canonical JSON."""
    lines = [json.loads(x) for x in (out / "frames.jsonl").read_text().splitlines()]
    assert len(lines) >= 5
    for line in lines:
        blob = base64.b64decode(line["b64"])
        packet = SDK_READERS[protocol](blob, keys)
        assert (packet["type"], packet["src"]) == (line["type"], line["src"])
        assert line["header_size"] == len(blob) - len(canonical_json(packet)) > 0


def test_both_strategies_under_every_protocol_answer_as_the_live_runs(every_protocol: Path, recorded: Path) -> None:
    rows = list(csv.DictReader((every_protocol / "results.csv").open()))
    live = {s: recorded_metrics(recorded, "solar-farm", s) for s in ("pipeline", "orchestrated")}
    assert sorted((r["strategy"], r["protocol"]) for r in rows) == sorted(
        (s, p) for s in ("pipeline", "orchestrated") for p in PROTOCOLS
    )
    for r in rows:
        assert r["status"] == "ok", r
        assert (r["prediction"], r["token_sum"]) == (live[r["strategy"]]["prediction"], live[r["strategy"]]["token_sum"]), r
        assert r["decode_us_p50"] and float(r["decode_us_p50"]) > 0, r  # the relay timed each frame's decoding
        if r["protocol"] != "json":
            assert int(r["header_overhead"]) > 0 and float(r["header_share"]) > 0, r


def test_bench_writes_results_summary_and_plot(tmp_path: Path, recorded: Path) -> None:
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "solar-farm").symlink_to(TASKS / "solar-farm")
    proc = gaiamesh(
        "bench", "--tasks", str(tmp_path / "tasks"), "--protocols", "json,compressed", "--repeat", "1",
        "--out", str(tmp_path / "bench"), "--replay", str(recorded),
        "--workspaces", str(tmp_path / "ws"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr

    rows = list(csv.DictReader((tmp_path / "bench/results.csv").open()))
    assert sorted(r["protocol"] for r in rows) == ["compressed", "json"]
    assert sorted(r["order"] for r in rows) == ["1", "2"]  # the warm-up is not a row
    assert (tmp_path / "bench/warm-up").is_dir()
    for r in rows:  # the machine's load beside each run (a replayed run, ms long, is not judged)
        assert float(r["load_1m"]) >= 0 and r["contended"] in ("True", "False")
        assert r["cpu_other"] != "" or r["contended"] == "False"
    rows = sorted(rows, key=lambda r: r["protocol"] != "json")
    assert {"bytes_tx", "bytes_rx", "header_overhead", "pkt_cnt", "elapsed_ms", "llm_ms", "network_share",
            "quality_score", "exact_match"} <= set(rows[0])  # fmt: skip
    assert all(r["status"] == "ok" for r in rows)
    assert int(rows[1]["bytes_tx"]) < int(rows[0]["bytes_tx"])  # compression pays on this document
    summary = (tmp_path / "bench/summary.md").read_text()
    assert "| json |" in summary and "| compressed |" in summary and "network_share" in summary
    assert "shuffled with seed 0" in summary and "## Load during the runs" in summary
    assert "model-free measures" in summary and "| compressed | " in summary.split("model-free measures")[1]
    png = (tmp_path / "bench/comparison.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000


def test_unreachable_remote_model_server_is_reported_in_metrics(tmp_path: Path) -> None:
    # 127.0.0.2 is loopback but not "local" to the runner, so it will not start a server there.
    host = f"http://127.0.0.2:{free_port()}"
    proc = gaiamesh(
        "run", str(TASKS / "solar-farm"), "--out", str(tmp_path), "--ollama-host", host, timeout=60
    )
    assert proc.returncode == 1
    assert f"model server unreachable at {host}" in proc.stderr
    m = json.loads((tmp_path / "metrics.json").read_text())
    assert m["status"] == "model_unreachable" and m["task_id"] == "solar-farm"


def test_a_two_fact_question_is_asked_in_two_steps_with_the_real_model(
    tmp_path: Path, model_server: str
) -> None:
    out = tmp_path / "two-fact"
    proc = gaiamesh(
        "run", str(TASKS / "mountain-observatory"), "--out", str(out), "--base-port", str(free_port_block(4)),
        "--ollama-host", model_server, "--workspaces", str(tmp_path / "ws"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [json.loads(x) for x in (out / "frames.jsonl").read_text().splitlines()]
    events = json.loads(base64.b64decode(next(x for x in lines if x["type"] == "events")["b64"]))
    hop = events["payload"]["hops"][0]
    # the inner question's answer (the bridge) is read off the discovery sentence by the model ...
    assert hop["question"] == "Who discovered comet 118P/Kestrel?" and "Horvath" in hop["answer"]
    assert "118P/Kestrel" in hop["fact"]
    # ... and the outer question is asked about it, all the way to reason
    resolved = events["payload"]["resolved_question"]
    assert resolved.startswith("On what date did ") and "Horvath" in resolved
    with tarfile.open(out / "run_artifacts.tar.gz") as tar:
        memory = json.load(tar.extractfile("workspaces/1/memory.json"))  # type: ignore[arg-type]
    assert memory["hops"] == events["payload"]["hops"]
    m = json.loads((out / "metrics.json").read_text())
    assert m["status"] == "ok" and m["prediction"]
