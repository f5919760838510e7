"""The compose deployment, end to end with real containers."""

from __future__ import annotations

import base64
import json
import subprocess
import tarfile
import time

import pytest
from websockets.sync.client import connect

from .conftest import CORE, WIDE, Stack

pytestmark = pytest.mark.integration

FIELDS = ["status", "task_id", "question", "answer", "prediction", "protocol", "model", "bytes_tx", "bytes_rx",
          "pkt_cnt", "header_overhead", "token_sum", "elapsed_ms", "llm_ms", "quality_score", "exact_match",
          "rouge_l", "gaia_match", "agents", "routing"]  # fmt: skip


def services(stack: Stack) -> dict[str, dict]:
    out = stack.compose("ps", "--format", "json").stdout
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    if len(rows) == 1 and isinstance(rows[0], list):
        rows = rows[0]
    return {r["Service"]: r for r in rows}


def test_default_stack_is_healthy_on_loopback_only(stack: Stack) -> None:
    ps = services(stack)
    for name in CORE:
        assert ps[name]["Health"] == "healthy", ps[name]
        for pub in ps[name].get("Publishers") or []:
            if pub.get("PublishedPort"):
                assert pub["URL"] == "127.0.0.1", pub


def test_websocket_handshake_with_every_agent(stack: Stack) -> None:
    for n in range(4):
        with connect(f"ws://127.0.0.1:190{n}/ws", open_timeout=10) as ws:
            assert ws.protocol.state.name == "OPEN"


def test_full_run_writes_metrics_and_archive(stack: Stack) -> None:
    code, output, m, results = stack.run("default")
    assert code == 0, output
    for field in FIELDS:
        assert field in m, field
    assert m["status"] == "ok" and m["task_id"] == "solar-farm" and m["prediction"]
    assert m["pkt_cnt"] == 5 and m["token_sum"] > 0
    assert "quality_score" in output  # the summary table is printed in the compose output
    with tarfile.open(results / "run_artifacts.tar.gz") as tar:
        names = set(tar.getnames())
    for n in range(4):
        assert {f"workspaces/{n}/agent.log", f"workspaces/{n}/memory.json"} <= names
    assert {"frames.jsonl", "metrics.json", "config.json"} <= names


def test_task_variable_and_a_signed_protocol_run(stack: Stack) -> None:
    signed = {"PROTOCOL": "signed"}
    try:
        up = stack.compose("up", "-d", "--wait", *CORE, env=signed, timeout=300)  # agents restart as signers
        assert up.returncode == 0, up.stderr
        code, output, m, results = stack.run("rowing-signed", TASK="./tasks/rowing-club", **signed)
        assert code == 0, output
        assert m["task_id"] == "rowing-club" and m["answer"] == "Port Ellery"
        assert m["protocol"] == "signed" and m["status"] == "ok" and m["rejected_cnt"] == 0
        lines = [json.loads(x) for x in (results / "frames.jsonl").read_text().splitlines()]
        assert (
            m["header_overhead"]
            == sum(x["header_size"] * ((x["src"] != "network") + len(x["dst"])) for x in lines)
            > 0
        )
        frame = base64.b64decode(lines[1]["b64"])
        assert frame[:2] == b"GS"  # signed frames on the wire, as the agents sent them
    finally:
        stack.compose("up", "-d", "--wait", *CORE, timeout=300)


def test_wide_profile_adds_agents_and_the_run_uses_them(stack: Stack) -> None:
    up = stack.compose("up", "-d", "--wait", *WIDE, profile="wide", timeout=300)
    assert up.returncode == 0, up.stderr
    code, output, m, _ = stack.run("wide", profile="wide")
    assert code == 0, output
    assert m["status"] == "ok" and m["routing"] == "share" and len(m["agents"]) == 8
    workers = {n for n, a in m["agents"].items() if a["pkts_sent"] > 0}
    assert len(workers) == 4  # each stage handled once ...
    assert workers & {"4", "5", "6", "7"}  # ... and the second replicas take their share
    stack.compose("stop", *WIDE, profile="wide", timeout=120)


def test_stopping_an_agent_mid_run_ends_with_a_clear_status(stack: Stack) -> None:
    results = stack.tmp / "killed"
    env = stack.run_env(results)
    proc = subprocess.Popen(
        ["docker", "compose", "-p", stack.project, "--env-file", str(stack.env_file), "run", "--rm", "network"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        frames = results / "frames.jsonl"
        deadline = time.monotonic() + 120
        while not (frames.exists() and frames.read_text().strip()):
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            assert time.monotonic() < deadline, "the run never started"
            time.sleep(0.05)  # watching a file another process writes
        assert stack.compose("kill", "agent-reason").returncode == 0
        output, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0
    m = json.loads((results / "metrics.json").read_text())
    assert m["status"] == "agent_dead", output
    assert m["error"] == "agent 3 (reason) disconnected and no other 'reason' agent is alive"
    assert m["agents"]["3"]["status"] == "dead"
    assert (results / "run_artifacts.tar.gz").is_file()
    stack.compose("up", "-d", "--wait", "agent-reason", timeout=120)
