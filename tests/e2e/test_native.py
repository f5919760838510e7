"""Each protocol on its own wire (``TRANSPORT=native``) end to end, as processes: the agents
serve each protocol with its SDK's own server, and the relay's protocol client reaches them
through the counting tap. One replayed bench starts one team that speaks every protocol (as a
user's bench does), so each protocol's run costs its run, not a team's start-up."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from gaiamesh.evaluation.audit import audit

from ..conftest import TASKS, free_port_block, recorded_metrics
from .test_run_local import gaiamesh

pytestmark = [pytest.mark.e2e, pytest.mark.model]

# The plain protocols' other three (binary, compressed, signed) run natively in the unit tests
# (tests/unit/mesh/native/test_native_relay.py); here each SDK and the plain baseline.
NATIVE = ["json", "a2a", "acp", "anp", "mcp", "agora"]
STREAMING = ["a2a", "mcp"]  # orchestrated runs: SSE, and MCP's progress events


def _bench(tmp: Path, recorded: Path, strategy: str, protocols: list[str]) -> dict[str, dict[str, str]]:
    (tmp / "tasks").mkdir(exist_ok=True)
    if not (tmp / "tasks" / "solar-farm").exists():
        (tmp / "tasks" / "solar-farm").symlink_to(TASKS / "solar-farm")
    out = tmp / strategy
    proc = gaiamesh(
        "bench", "--tasks", str(tmp / "tasks"), "--protocols", ",".join(protocols), "--transports", "native",
        "--strategies", strategy, "--repeat", "1", "--out", str(out), "--replay", str(recorded),
        "--base-port", str(free_port_block(4)), "--workspaces", str(tmp / "ws"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {r["protocol"]: r for r in csv.DictReader((out / "results.csv").open())}
    assert sorted(rows) == sorted(protocols) and {r["transport"] for r in rows.values()} == {"native"}
    for folder in (out / "runs").iterdir():
        for run in folder.iterdir():
            assert all(a == b for _, a, b in audit(run)), (run, list(audit(run)))
    return rows


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory: pytest.TempPathFactory, recorded: Path) -> dict[str, dict[str, str]]:
    return _bench(tmp_path_factory.mktemp("native"), recorded, "pipeline", NATIVE)


@pytest.fixture(scope="module")
def orchestrated(tmp_path_factory: pytest.TempPathFactory, recorded: Path) -> dict[str, dict[str, str]]:
    return _bench(tmp_path_factory.mktemp("native-orchestrated"), recorded, "orchestrated", STREAMING)


@pytest.mark.parametrize("protocol", NATIVE)
def test_every_native_protocol_answers_as_the_live_run_and_counts_its_layers(
    pipeline: dict[str, dict[str, str]], recorded: Path, protocol: str
) -> None:
    r, live = pipeline[protocol], recorded_metrics(recorded, "solar-farm")
    assert r["status"] == "ok", r
    assert (r["prediction"], r["token_sum"]) == (live["prediction"], live["token_sum"]), r
    assert int(r["requests"]) > 0 and int(r["connections"]) > 0 and int(r["refused"]) == 0, r
    assert int(r["http_tx"]) > int(r["body_tx"]) >= int(r["bytes_tx"]), r
    if int(r["segs_out"]):  # the kernel counted the agents' side
        assert int(r["tcp_bytes_sent"]) == int(r["http_tx"]), r


@pytest.mark.parametrize("protocol", STREAMING)
def test_an_orchestrated_run_on_a_streaming_wire_answers_as_the_live_run(
    orchestrated: dict[str, dict[str, str]], recorded: Path, protocol: str
) -> None:
    r, live = orchestrated[protocol], recorded_metrics(recorded, "solar-farm", "orchestrated")
    assert r["status"] == "ok" and r["strategy"] == "orchestrated", r["error"]
    assert (r["prediction"], r["token_sum"]) == (live["prediction"], live["token_sum"]), r


def test_a_native_run_with_the_real_model(tmp_path: Path, model_server: str) -> None:
    out = tmp_path / "json"
    proc = gaiamesh(
        "run", str(TASKS / "solar-farm"), "--out", str(out), "--base-port", str(free_port_block(4)),
        "--protocol", "json", "--transport", "native", "--workspaces", str(tmp_path / "ws"),
        "--ollama-host", model_server,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "on its own wire" in proc.stdout + proc.stderr
    m = json.loads((out / "metrics.json").read_text())
    assert m["status"] == "ok" and m["prediction"] and m["llm_ms"] > 0 and m["transport"] == "native"
    assert m["backend"] == "ollama" and m["layers"]["requests"] > 0
    assert all(a == b for _, a, b in audit(out)), list(audit(out))
