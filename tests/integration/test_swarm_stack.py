"""The swarm stack generated from the repository's compose.yaml (``docker compose config``, which
needs no running container): every difference between compose and swarm, handled. The parts
that need no docker at all are in tests/unit/deploy/test_swarm_stack.py."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gaiamesh.cli import main
from gaiamesh.deploy.swarm import (
    IGNORED,
    ON_AGENT_NODE,
    ON_NETWORK_NODE,
    Stack,
    StackOptions,
    image_name,
    parse_replicas,
    stack_from_compose,
    swarm_agents,
)
from gaiamesh.errors import ConfigError

from ..conftest import ROOT

ACCESS_KEY = "dummy-access-key-0123456789abcdef"
SESSION_SECRET = "dummy-session-secret-0123456789abcdef"
DIGEST = "sha256:" + "ab" * 32
SECRET_VARS = ("GAIAMESH_ACCESS_KEY", "GAIAMESH_SESSION_SECRET", "OPENAI_API_KEY")

# What `docker compose` itself needs from the environment; nothing that compose.yaml reads.
DOCKER_ENV = ("PATH", "HOME", "TMPDIR", "DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CONTEXT", "DOCKER_CERT_PATH",
              "DOCKER_TLS_VERIFY")


def render(folder: Path, *profiles: str, env_lines: str = "") -> dict[str, Any]:
    """``docker compose config --format json`` of the repository, secrets from a temp env file."""
    env_file = folder / "test.env"
    env_file.write_text(f"GAIAMESH_ACCESS_KEY={ACCESS_KEY}\nGAIAMESH_SESSION_SECRET={SESSION_SECRET}\n{env_lines}")
    # The env file decides: compose would let any variable of this process win over it (make
    # exports GAIAMESH_USER; tests before this one set RESULTS_DIR, SERVICE_PORT, ...).
    env = {k: v for k, v in os.environ.items() if k in DOCKER_ENV}
    argv = ["docker", "compose", "--env-file", str(env_file)]
    argv += [a for p in profiles for a in ("--profile", p)]
    proc = subprocess.run([*argv, "config", "--format", "json"], cwd=ROOT, capture_output=True, text=True,
                          check=True, env=env)  # fmt: skip
    return dict(json.loads(proc.stdout))


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return render(tmp_path_factory.mktemp("wide"), "wide", "orchestrated")


def load(text: str) -> dict[str, Any]:
    """The stack file: comment lines, then JSON (which is YAML)."""
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    return dict(json.loads(body))


def stack(config: dict[str, Any], **options: Any) -> dict[str, Any]:
    return load(stack_from_compose(config, StackOptions(**options)).render())


def test_keys_swarm_ignores_or_refuses_are_gone_and_restart_is_a_policy(wide: dict[str, Any]) -> None:
    services = stack(wide)["services"]
    assert len(services) == 14  # 11 agents, web, network, ollama: the profiles asked for
    for name, svc in services.items():
        assert not set(svc) & IGNORED, name
        assert not {"build", "depends_on", "profiles", "pull_policy", "container_name", "restart"} & set(svc)
        assert wide["services"][name]["restart"] == "unless-stopped"
        assert svc["deploy"]["restart_policy"] == {"condition": "any"}, name
        # tmpfs (ignored by swarm) is a tmpfs mount, so the read-only root keeps a writable /tmp
        assert svc["read_only"] is True
        assert {"type": "tmpfs", "target": "/tmp", "tmpfs": {"size": 64 * 1024**2}} in svc["volumes"], name
        assert svc["networks"] == ["mesh"], name
    assert "name" not in stack(wide) and stack(wide)["version"] == "3.9"


def test_every_image_is_named_by_the_registry_and_its_digest(wide: dict[str, Any]) -> None:
    services = stack(wide, registry="registry.lan:5000", digests={"gaiamesh-agent:0.1.0": DIGEST})["services"]
    for name, svc in services.items():
        assert svc["image"].startswith("registry.lan:5000/gaiamesh-"), name
    assert services["agent-search"]["image"] == f"registry.lan:5000/gaiamesh-agent:0.1.0@{DIGEST}"
    assert services["web"]["image"] == f"registry.lan:5000/gaiamesh-agent:0.1.0@{DIGEST}"
    assert services["network"]["image"] == "registry.lan:5000/gaiamesh-network:0.1.0"
    # the default: the local registry, which every node reaches at 127.0.0.1:5000
    assert stack(wide)["services"]["ollama"]["image"] == "127.0.0.1:5000/gaiamesh-ollama:0.1.0"
    # a digest may be keyed by the qualified name; an image that names a registry keeps it
    qualified = {"r:5000/gaiamesh-network:0.1.0": DIGEST}
    assert image_name("gaiamesh-network:0.1.0", StackOptions("r:5000", qualified)).endswith(f"@{DIGEST}")
    assert image_name("ghcr.io/x/y:1", StackOptions("r:5000")) == "ghcr.io/x/y:1"
    assert image_name("ollama/ollama:0.6.3", StackOptions("r:5000")) == "r:5000/ollama/ollama:0.6.3"
    with pytest.raises(ConfigError, match="not sha256"):
        image_name("a:1", StackOptions("r:5000", {"a:1": "latest"}))


def test_secrets_leave_the_environment_for_swarm_secrets(wide: dict[str, Any], tmp_path: Path) -> None:
    external = stack(wide)
    for name, svc in external["services"].items():
        assert not set(SECRET_VARS) & set(svc["environment"]), name
    net = external["services"]["network"]
    assert net["environment"]["GAIAMESH_ACCESS_KEY_FILE"] == "/run/secrets/gaiamesh_access_key"
    assert net["environment"]["GAIAMESH_SESSION_SECRET_FILE"] == "/run/secrets/gaiamesh_session_secret"
    attached = {s["source"]: s for s in net["secrets"]}
    assert attached["gaiamesh_access_key"] == {"source": "gaiamesh_access_key", "target": "gaiamesh_access_key",
                                               "uid": "10001", "gid": "10001", "mode": 0o400}  # fmt: skip
    assert external["secrets"]["gaiamesh_access_key"] == {"external": True, "name": "gaiamesh_access_key"}
    # an empty OPENAI_API_KEY is nothing to hand over: no secret, no variable
    assert "OPENAI_API_KEY_FILE" not in external["services"]["agent-search"]["environment"]
    # file-based: the values go to files the caller writes, never into the stack file
    files = stack_from_compose(wide, StackOptions(secrets_dir=str(tmp_path)))
    text = files.render()
    assert ACCESS_KEY not in text and SESSION_SECRET not in text
    assert files.secret_values == {"gaiamesh_access_key": ACCESS_KEY, "gaiamesh_session_secret": SESSION_SECRET}
    named = f"gaiamesh_gaiamesh_access_key_{hashlib.sha256(ACCESS_KEY.encode()).hexdigest()[:12]}"
    assert load(text)["secrets"]["gaiamesh_access_key"] == {"file": f"{tmp_path}/gaiamesh_access_key", "name": named}


def test_a_file_secret_or_config_is_named_by_its_content_so_a_redeploy_takes_a_new_one(wide: dict[str, Any]) -> None:
    """Swarm refuses to change a secret in use: a regenerated key or a new .env value must be a
    new swarm object, which the services switch to on the next deploy."""
    pem, table = str(ROOT / "keys" / "network.pem"), str(ROOT / "keys" / "public.json")

    def names(key_digest: str, access_key: str) -> tuple[str, str, str]:
        config = json.loads(json.dumps(wide))
        config["services"]["network"]["environment"]["GAIAMESH_ACCESS_KEY"] = access_key
        options = StackOptions(secrets_dir="/s", fingerprints={pem: key_digest, table: "ab" * 32}, stack="st")
        doc = stack_from_compose(config, options).document
        return doc["secrets"]["key_network.pem"]["name"], doc["configs"]["key_public.json"]["name"], \
            doc["secrets"]["gaiamesh_access_key"]["name"]  # fmt: skip

    first = names("0" * 64, "key-one-0123456789abcdef")
    assert first[0] == "st_key_network.pem_000000000000" and first[1] == "st_key_public.json_abababababab"
    assert names("0" * 64, "key-one-0123456789abcdef") == first  # unchanged content: the same objects
    rotated = names("1" * 64, "key-two-0123456789abcdef")
    assert rotated[0] != first[0] and rotated[2] != first[2] and rotated[1] == first[1]


def test_an_openai_key_is_a_secret_of_every_agent(tmp_path: Path) -> None:
    config = render(tmp_path, env_lines="LLM_BACKEND=openai\nOPENAI_API_KEY=sk-dummy-0123456789\n")
    doc = stack(config)
    search = doc["services"]["agent-search"]
    assert "OPENAI_API_KEY" not in search["environment"]
    assert search["environment"]["OPENAI_API_KEY_FILE"] == "/run/secrets/openai_api_key"
    assert "sk-dummy-0123456789" not in json.dumps(doc)


def test_signing_keys_are_secrets_and_the_public_table_a_config(wide: dict[str, Any]) -> None:
    doc = stack(wide)
    search = doc["services"]["agent-search"]
    assert {"source": "key_0.pem", "target": "/keys/0.pem", "uid": "10001", "gid": "10001", "mode": 0o400} in search[
        "secrets"
    ]
    assert search["configs"] == [{"source": "key_public.json", "target": "/keys/public.json", "mode": 0o444}]
    assert doc["secrets"]["key_network.pem"] == {"file": str(ROOT / "keys" / "network.pem")}
    assert doc["configs"] == {"key_public.json": {"file": str(ROOT / "keys" / "public.json")}}
    for name, svc in doc["services"].items():
        assert not [v for v in svc["volumes"] if v["target"].startswith("/keys")], name


def test_workspaces_are_named_volumes_and_the_network_keeps_its_binds_on_its_node(wide: dict[str, Any]) -> None:
    doc = stack(wide)
    search = doc["services"]["agent-search"]
    # no bind on an agent: the default backend reads no recorded runs (/replay is dropped)
    assert [v for v in search["volumes"] if v["type"] != "tmpfs"] == [
        {"type": "volume", "source": "workspace-0", "target": "/workspaces"}
    ]
    assert set(doc["volumes"]) == {f"workspace-{n}" for n in range(11)}
    net = {v["target"]: v for v in doc["services"]["network"]["volumes"]}
    # remote workspaces are not on its node; the bundled stream sets are, for POST /api/streams
    assert sorted(net) == ["/results", "/task", "/tasks", "/tasks-stream", "/tmp"]
    assert net["/tasks-stream"]["read_only"] is True
    assert net["/results"] == {"type": "bind", "source": str(ROOT / "results"), "target": "/results"}
    assert net["/tasks"]["read_only"] is True and "bind" not in net["/tasks"]  # swarm creates no host path


def test_a_replay_keeps_its_recorded_runs(tmp_path: Path) -> None:
    recorded = tmp_path / "recorded"
    doc = stack(render(tmp_path, env_lines=f"LLM_BACKEND=replay\nREPLAY_FROM={recorded}\n"))
    replay = [v for v in doc["services"]["agent-search"]["volumes"] if v["target"] == "/replay"]
    assert replay == [{"type": "bind", "source": str(recorded), "target": "/replay", "read_only": True}]


def test_only_the_api_is_published_in_host_mode(wide: dict[str, Any]) -> None:
    services = stack(wide)["services"]
    published = {name: svc["ports"] for name, svc in services.items() if svc.get("ports")}
    assert published == {"network": [{"target": 8080, "published": 8080, "protocol": "tcp", "mode": "host"}]}
    assert all(p["host_ip"] == "127.0.0.1" for p in wide["services"]["agent-search"]["ports"])  # compose's


def test_service_names_answer_with_task_addresses_not_a_virtual_ip(wide: dict[str, Any]) -> None:
    assert {svc["deploy"].get("endpoint_mode") for svc in stack(wide)["services"].values()} == {"dnsrr"}


def test_replicas_and_placement_as_asked(wide: dict[str, Any]) -> None:
    doc = stack(wide, replicas=parse_replicas(["search=3", "reason=2,extract=1"]))
    services = doc["services"]
    replicas = {n: s["deploy"]["replicas"] for n, s in services.items() if n.startswith("agent-")}
    assert replicas == {
        "agent-search": 3, "agent-search-2": 3, "agent-reason": 2, "agent-reason-2": 2, "agent-extract": 1,
        "agent-extract-2": 1, "agent-triple": 1, "agent-triple-2": 1, "agent-orchestrator": 1,
        "agent-research": 1, "agent-utility": 1,
    }  # fmt: skip
    for name, svc in services.items():
        constraints = svc["deploy"].get("placement", {}).get("constraints")
        if name.startswith("agent-"):
            assert constraints == [ON_AGENT_NODE], name
        elif name in ("network", "web"):  # web reads the checkout's tasks folder through a bind
            assert constraints == [ON_NETWORK_NODE], name
        else:
            assert constraints is None and "replicas" not in svc["deploy"], name
    assert services["network"]["deploy"]["resources"]["limits"] == {"cpus": "1", "memory": str(3 * 1024**3)}  # NETWORK_MEMORY: a stream runs in it
    assert doc["networks"] == {"mesh": {"driver": "overlay", "attachable": True}}
    with pytest.raises(ConfigError, match="no agent service runs: serch"):
        stack(wide, replicas={"serch": 2})
    for bad in (["search"], ["search=0"], ["=2"], ["search=x"]):
        with pytest.raises(ConfigError, match="TOOL=N"):
            parse_replicas(bad)


def test_agents_name_every_replica_of_the_stacks_agent_services(wide: dict[str, Any]) -> None:
    agents = stack(wide)["services"]["network"]["environment"]["AGENTS"]
    # every agent service of the stack, by tasks.<service> (one address per replica), required
    assert agents.split(",") == [
        "0=search@dns:tasks.agent-search:9000", "1=extract@dns:tasks.agent-extract:9001",
        "2=triple@dns:tasks.agent-triple:9002", "3=reason@dns:tasks.agent-reason:9003",
        "4=search@dns:tasks.agent-search-2:9004", "5=extract@dns:tasks.agent-extract-2:9005",
        "6=triple@dns:tasks.agent-triple-2:9006", "7=reason@dns:tasks.agent-reason-2:9007",
        "8=orchestrator@dns:tasks.agent-orchestrator:9008", "9=research@dns:tasks.agent-research:9009",
        "10=utility@dns:tasks.agent-utility:9010",
        # the stream profile is not deployed here: its entries stay as compose has them
        "11=coordinator@agent-coordinator:9011?", "12=answerer@dns:agent-answerer:9012?",
    ]  # fmt: skip
    # other entries stay: an agent outside the stack, a profile's agent that is not deployed, a dns: one;
    # compose's dns:SERVICE (every replica of a scaled service) is the stack's tasks.SERVICE
    line = "0=search@agent-search:9000,4=search@agent-search-2:9004?,5=x@10.0.0.9:7,6=y@dns:tasks.z:1?,7=a@dns:agent-a:2?"
    assert swarm_agents(line, frozenset({"agent-search", "agent-a"})) == (
        "0=search@dns:tasks.agent-search:9000,4=search@agent-search-2:9004?,5=x@10.0.0.9:7,6=y@dns:tasks.z:1?,"
        "7=a@dns:tasks.agent-a:2"
    )
    with pytest.raises(ConfigError, match="bad AGENTS entry"):
        swarm_agents("0=search", frozenset())


def test_the_compose_config_is_left_as_it_was(wide: dict[str, Any]) -> None:
    before = copy.deepcopy(wide)
    stack(wide, replicas={"search": 2})
    assert wide == before


def test_the_command_writes_a_stack_that_docker_stack_config_accepts(tmp_path: Path) -> None:
    env_file = tmp_path / "test.env"
    env_file.write_text(f"GAIAMESH_ACCESS_KEY={ACCESS_KEY}\nGAIAMESH_SESSION_SECRET={SESSION_SECRET}\n")
    digests = tmp_path / "digests.json"
    digests.write_text(json.dumps({"gaiamesh-network:0.1.0": DIGEST}))
    out, secrets = tmp_path / "stack.yaml", tmp_path / "secrets"
    cwd = Path.cwd()
    os.chdir(ROOT)  # docker compose reads the project in the current folder, as `make` runs it
    try:
        code = main(["swarm-stack", "--env-file", str(env_file), "--profile", "wide", "--replicas", "search=2",
                     "--registry", "127.0.0.1:5000", "--digests", str(digests), "--secrets-dir", str(secrets),
                     "--out", str(out)])  # fmt: skip
    finally:
        os.chdir(cwd)
    assert code == 0
    doc = load(out.read_text())
    assert len(doc["services"]) == 10 and doc["services"]["agent-search-2"]["deploy"]["replicas"] == 2
    assert doc["services"]["network"]["image"] == f"127.0.0.1:5000/gaiamesh-network:0.1.0@{DIGEST}"
    assert (secrets / "gaiamesh_access_key").read_text() == ACCESS_KEY
    assert (secrets / "gaiamesh_access_key").stat().st_mode & 0o777 == 0o600
    has = subprocess.run(["docker", "stack", "config", "--help"], capture_output=True)
    assert has.returncode == 0, "this docker has no `docker stack config`, which checks the stack file"
    # docker stack config loads the file by the stack format's schema (3.9), with no swarm:
    # a key swarm refuses (pull_policy, profiles) fails it
    checked = subprocess.run(["docker", "stack", "config", "-c", str(out)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    assert "mode: host" in checked.stdout and "pull_policy" not in checked.stdout
    refused = tmp_path / "refused.yaml"
    bad = load(out.read_text())
    bad["services"]["ollama"]["pull_policy"] = "never"
    refused.write_text(json.dumps(bad))
    checked = subprocess.run(["docker", "stack", "config", "-c", str(refused)], capture_output=True, text=True)
    assert checked.returncode != 0 and "pull_policy" in checked.stderr


def test_the_command_reads_a_saved_config(tmp_path: Path, wide: dict[str, Any]) -> None:
    saved = tmp_path / "config.json"
    saved.write_text(json.dumps(wide))
    out = tmp_path / "stack.yaml"
    assert main(["swarm-stack", "--compose-config", str(saved), "--registry", "", "--out", str(out)]) == 0
    assert load(out.read_text())["services"]["network"]["image"] == "gaiamesh-network:0.1.0"
    assert isinstance(stack_from_compose(wide, StackOptions()), Stack)
    saved.write_text("not json")
    assert main(["swarm-stack", "--compose-config", str(saved), "--out", str(out)]) == 2


def test_the_mesh_token_reaches_the_relay_and_every_agent_as_a_secret(tmp_path: Path) -> None:
    token = "dummy-mesh-token-0123456789abcdef"
    config = render(tmp_path, "wide", env_lines=f"GAIAMESH_MESH_TOKEN={token}\n")
    files = stack_from_compose(config, StackOptions(secrets_dir=str(tmp_path)))
    assert token not in files.render() and files.secret_values["gaiamesh_mesh_token"] == token
    for name, svc in load(files.render())["services"].items():
        if name == "network" or name.startswith("agent-"):
            assert svc["environment"]["GAIAMESH_MESH_TOKEN_FILE"] == "/run/secrets/gaiamesh_mesh_token", name
            assert "GAIAMESH_MESH_TOKEN" not in svc["environment"], name
