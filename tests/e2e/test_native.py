"""Each protocol on its own wire (``TRANSPORT=native``) end to end: ``gaiamesh run`` starts the
agents as processes, each serving its protocol with its SDK's own server, and the relay's
protocol client reaches them through the counting tap."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gaiamesh.evaluation.audit import audit

from ..conftest import TASKS, free_port_block, recorded_metrics, replayed
from .test_run_local import gaiamesh

pytestmark = [pytest.mark.e2e, pytest.mark.model]

# The plain protocols' other three (binary, compressed, signed) run natively in the unit tests
# (tests/unit/mesh/native/test_native_relay.py); here each SDK and the plain baseline, as processes.
NATIVE = ["json", "a2a", "acp", "anp", "mcp", "agora"]


def native_run(tmp: Path, protocol: str, env: dict[str, str] | None = None, *extra: str) -> dict[str, object]:
    out = tmp / protocol
    proc = gaiamesh(
        "run", str(TASKS / "solar-farm"), "--out", str(out), "--base-port", str(free_port_block(4)),
        "--protocol", protocol, "--transport", "native", "--workspaces", str(tmp / "ws"), *extra, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "on its own wire" in proc.stdout + proc.stderr
    m: dict[str, object] = json.loads((out / "metrics.json").read_text())
    assert all(a == b for _, a, b in audit(out)), list(audit(out))
    return m


@pytest.mark.parametrize("protocol", NATIVE)
def test_every_native_protocol_answers_as_the_live_run_and_counts_its_layers(
    tmp_path: Path, recorded: Path, protocol: str
) -> None:
    m = native_run(tmp_path, protocol, replayed(recorded))
    live = recorded_metrics(recorded, "solar-farm")
    assert m["status"] == "ok" and m["transport"] == "native" and m["protocol"] == protocol
    assert m["prediction"] == live["prediction"] and m["token_sum"] == int(live["token_sum"])
    layers = m["layers"]
    assert isinstance(layers, dict)
    assert layers["requests"] > 0 and layers["connections"] > 0 and layers["refused"] == 0
    assert layers["http_tx"] > layers["body_tx"] >= int(m["bytes_tx"])  # type: ignore[call-overload]
    if layers["segs_out"]:  # the kernel counted the agents' side
        assert layers["tcp_bytes_sent"] == layers["http_tx"]


def test_a_native_run_with_the_real_model(tmp_path: Path, model_server: str) -> None:
    m = native_run(tmp_path, "json", None, "--ollama-host", model_server)
    assert m["status"] == "ok" and m["prediction"] and m["llm_ms"] > 0  # type: ignore[operator]
    assert m["backend"] == "ollama" and m["layers"]


@pytest.mark.parametrize("protocol", ["a2a", "mcp"])  # SSE, and MCP's progress events
def test_an_orchestrated_run_on_a_streaming_wire_answers_as_the_live_run(
    tmp_path: Path, recorded: Path, protocol: str
) -> None:
    m = native_run(tmp_path, protocol, replayed(recorded), "--strategy", "orchestrated")
    live = recorded_metrics(recorded, "solar-farm", "orchestrated")
    assert m["status"] == "ok" and m["strategy"] == "orchestrated", m["error"]
    assert m["prediction"] == live["prediction"] and m["token_sum"] == int(live["token_sum"])
