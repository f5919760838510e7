"""The compose files as rendered by `docker compose config`: defaults, security, the image switch."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ..conftest import ROOT

pytestmark = pytest.mark.integration
BUILT = ["ollama", "agent-search", "agent-extract", "agent-triple", "agent-reason", "network"]


SECRETS = "GAIAMESH_ACCESS_KEY=k\nGAIAMESH_SESSION_SECRET=s\n"


# What `docker compose` itself needs from the environment; nothing that compose.yaml reads.
DOCKER_ENV = ("PATH", "HOME", "TMPDIR", "DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CONTEXT", "DOCKER_CERT_PATH",
              "DOCKER_TLS_VERIFY")


def render(tmp_path: Path, env_lines: str = "", *args: str) -> dict[str, Any]:
    env_file = tmp_path / "test.env"
    env_file.write_text(SECRETS + env_lines)
    # The env file decides: compose would let any variable of this process win over it (make
    # exports GAIAMESH_USER; tests before this one set RESULTS_DIR, SERVICE_PORT, ...).
    env = {k: v for k, v in os.environ.items() if k in DOCKER_ENV}
    proc = subprocess.run(
        ["docker", "compose", "--env-file", str(env_file), *args, "config", "--format", "json"],
        cwd=ROOT, capture_output=True, text=True, check=True, env=env,
    )  # fmt: skip
    return json.loads(proc.stdout)


def test_default_stack_builds_locally_and_publishes_on_loopback(tmp_path: Path) -> None:
    cfg = render(tmp_path, "", "--profile", "wide")
    services = cfg["services"]
    assert len([s for s in services if s.startswith("agent-")]) == 8
    for name in BUILT:
        svc = services[name]
        assert svc["pull_policy"] in ("never", "build") and "build" in svc, name
        assert not svc["image"].endswith(":latest") and ":" in svc["image"], name
    for name, svc in services.items():
        for port in svc.get("ports", []):
            assert port["host_ip"] == "127.0.0.1", (name, port)
    agent_images = {services[s]["image"] for s in services if s.startswith("agent-")}
    assert agent_images == {"gaiamesh-agent:0.1.0"}  # one agent image for every tool
    tools = sorted(services[s]["environment"]["TOOL"] for s in services if s.startswith("agent-"))
    assert tools == sorted(["search", "extract", "triple", "reason"] * 2)
    # each agent mounts its own workspace, only its own private keys (signing, and its wire
    # certificate for WIRE_TLS), the local CA (its trust file for anp's DID host on the native
    # wire) and the recorded runs a replay reads (read-only)
    search = {v["target"]: v.get("read_only", False) for v in services["agent-search"]["volumes"]}
    assert sorted(search) == ["/keys/0.pem", "/keys/local-ca.pem", "/keys/local-trust.pem", "/keys/public.json",
                              "/keys/tls-0.pem", "/replay", "/workspaces/0"]  # fmt: skip
    assert search["/replay"] and search["/keys/local-trust.pem"] and search["/keys/tls-0.pem"]
    assert not search["/workspaces/0"]
    assert services["agent-search"]["environment"]["SSL_CERT_FILE"] == "/keys/local-trust.pem"
    network = {v["target"]: v.get("read_only", False) for v in services["network"]["volumes"]}
    assert network["/keys/tls-network.pem"] and "/keys/tls-0.pem" not in network
    assert network["/task"] and network["/tasks"] and network["/workspaces"] and not network["/results"]
    # the network service is long-lived on 127.0.0.1:8080 with a healthcheck; the model server
    # is not published, so it cannot clash with an Ollama the user already runs on 11434
    assert [(p["host_ip"], p["published"], p["target"]) for p in services["network"]["ports"]] == [
        ("127.0.0.1", "8080", 8080)
    ]
    assert "healthcheck" in services["network"] and services["network"]["restart"] == "unless-stopped"
    assert "ports" not in services["ollama"]


def test_every_container_is_non_root_read_only_and_limited(tmp_path: Path) -> None:
    services = render(tmp_path, "", "--profile", "wide", "--profile", "orchestrated")["services"]
    assert len(services) == 14  # 11 agents, web, network, ollama
    for name, svc in services.items():
        uid = svc.get("user", "").split(":")[0]
        assert uid.isdigit() and int(uid) != 0, (name, svc.get("user"))
        assert svc["read_only"] is True and svc["cap_drop"] == ["ALL"], name
        assert "no-new-privileges:true" in svc["security_opt"], name
        limits = svc["deploy"]["resources"]["limits"]
        most = 3 if name == "network" else 2  # GiB: a stream's local team runs in the network container
        assert float(limits["cpus"]) <= 2.0 and 0 < int(limits["memory"]) <= most * 1024**3, (name, limits)
    # the images themselves default to a non-root user too (a plain `docker run`); not the test
    # swarm's node, whose job is to run a Docker engine (root), and which no stack runs
    for dockerfile in (ROOT / "services").glob("*/Dockerfile"):
        if dockerfile.parent.name != "swarm-node":
            assert "\nUSER 10001:10001\n" in dockerfile.read_text(), dockerfile
    # a root host runs the containers as 10001, a non-root host as itself
    user = render(tmp_path, "GAIAMESH_USER=1234:1234\n")["services"]["network"]["user"]
    assert user == "1234:1234"


def test_the_service_refuses_to_start_without_its_secrets(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GAIAMESH_")} | {"GAIAMESH_ENV_FILE": ""}
    proc = subprocess.run([sys.executable, "-m", "gaiamesh", "serve"], cwd=tmp_path, capture_output=True,
                          text=True, env=env, timeout=60)  # fmt: skip
    assert proc.returncode == 2
    assert "GAIAMESH_ACCESS_KEY is empty: the service needs an access key (make setup writes one)" in proc.stderr


def test_no_dockerfile_pulls_a_syntax_image() -> None:
    for dockerfile in (ROOT / "services").glob("*/Dockerfile"):
        text = dockerfile.read_text()
        assert "# syntax=" not in text and "ARG BASE_IMAGE=" in text, dockerfile


def test_one_env_line_switches_to_the_official_ollama_image(tmp_path: Path) -> None:
    cfg = render(tmp_path, "COMPOSE_FILE=compose.yaml:compose.ollama-official.yaml\n")
    services = cfg["services"]
    ollama = services["ollama"]
    assert ollama["image"] == "ollama/ollama:0.6.3" and "build" not in ollama
    assert ollama["healthcheck"]["test"] == ["CMD", "ollama", "list"]
    pull = services["ollama-pull"]
    assert pull["entrypoint"] == ["ollama", "pull", "gemma3:270m"]
    assert pull["environment"]["OLLAMA_HOST"] == "ollama:11434"
    assert services["network"]["depends_on"]["ollama-pull"]["condition"] == "service_completed_successfully"
    assert services["agent-search"]["environment"]["OLLAMA_HOST"] == "http://ollama:11434"


def test_a_replay_reads_the_recorded_runs_in_every_agent_read_only(tmp_path: Path) -> None:
    recorded = tmp_path / "recorded"
    cfg = render(tmp_path, f"LLM_BACKEND=replay\nREPLAY_FROM={recorded}\nREPLAY_PACE=recorded\n", "--profile", "wide",
                 "--profile", "orchestrated")  # fmt: skip
    agents = {n: s for n, s in cfg["services"].items() if n.startswith("agent-")}
    assert len(agents) == 11
    for name, service in agents.items():
        env = service["environment"]
        assert (env["LLM_BACKEND"], env["REPLAY_FROM"], env["REPLAY_PACE"]) == ("replay", "/replay", "recorded"), name
        (mount,) = [v for v in service["volumes"] if v["target"] == "/replay"]
        assert mount["source"] == str(recorded) and mount["read_only"], name
    default = render(tmp_path)["services"]["agent-search"]  # without REPLAY_FROM: the results folder
    (mount,) = [v for v in default["volumes"] if v["target"] == "/replay"]
    assert mount["source"] == str(ROOT / "results")


def test_make_up_names_a_taken_port_its_holder_and_the_variable_that_moves_it(tmp_path: Path) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        env = {**os.environ, "SERVICE_PORT": str(port), "HOST_PORT_PREFIX": "29", "COMPOSE_PROJECT_NAME": "gm-ports-test"}
        proc = subprocess.run([sys.executable, "scripts/check-ports.py"], cwd=ROOT, capture_output=True, text=True,
                              env=env, timeout=60)  # fmt: skip
    assert proc.returncode == 1
    assert f"port 127.0.0.1:{port} is taken by " in proc.stderr and f"(pid {os.getpid()})" in proc.stderr  # held here
    assert "set SERVICE_PORT (the network service's API and page) in .env to move it" in proc.stderr
    free = subprocess.run([sys.executable, "scripts/check-ports.py"], cwd=ROOT, capture_output=True, text=True,
                          env=env, timeout=60)  # fmt: skip
    assert free.returncode == 0, free.stderr


def test_the_orchestrated_profiles_ports_are_checked_when_it_is_on() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 2909))  # the research agent's port with HOST_PORT_PREFIX=29
        held.listen()
        base = {**os.environ, "HOST_PORT_PREFIX": "29", "SERVICE_PORT": "0", "COMPOSE_PROJECT_NAME": "gm-ports-test"}
        on = subprocess.run([sys.executable, "scripts/check-ports.py"], cwd=ROOT, capture_output=True, text=True,
                            env={**base, "COMPOSE_PROFILES": "orchestrated"}, timeout=60)  # fmt: skip
        off = subprocess.run([sys.executable, "scripts/check-ports.py"], cwd=ROOT, capture_output=True, text=True,
                             env={**base, "COMPOSE_PROFILES": ""}, timeout=60)  # fmt: skip
    assert on.returncode == 1 and "port 127.0.0.1:2909 is taken" in on.stderr
    assert "the orchestrated team publishes on 2908-2910" in on.stderr
    assert off.returncode == 0, off.stderr
