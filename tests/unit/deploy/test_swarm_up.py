"""swarm-up / swarm-down: the decisions (plain calls on what docker reports), and the steps in
order against a fake docker CLI that keeps a swarm's state (no engine is touched: the host's
swarm must stay inactive; the integration test runs them against a nested engine)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gaiamesh.deploy.swarm import AGENTS_LABEL, NETWORK_LABEL, parse_digests
from gaiamesh.deploy.swarmdown import swarm_down
from gaiamesh.deploy.swarmrun import Docker, UpOptions, swarm_up
from gaiamesh.deploy.swarmup import (
    Engine,
    Made,
    Node,
    api_port,
    container_action,
    digests_json,
    init_argv,
    label_plan,
    labels_to_remove,
    load_state,
    make_targets,
    not_ready,
    parse_service_ls,
    progress_line,
    project_images,
    pushed_digest,
    registry_run_argv,
    repo_digest,
    repository,
    results_folder,
    runs_own_registry,
    save_state,
    swarm_action,
)
from gaiamesh.errors import ConfigError, DeployError

A = "sha256:" + "a" * 64
B = "sha256:" + "b" * 64


def engine(state: str = "active", manager: bool = True, cluster: str = "C1", addr: str = "10.0.0.2") -> Engine:
    return Engine("E1", state, manager, "N1", addr, cluster)


# --- decisions -----------------------------------------------------------------------------------
def test_the_swarm_is_made_only_where_none_is_active() -> None:
    info = {"ID": "E1", "Swarm": {"LocalNodeState": "inactive", "ControlAvailable": False, "NodeID": ""}}
    assert swarm_action(Engine.from_info(info)) == "init"
    info = {"ID": "E1", "Swarm": {"LocalNodeState": "active", "ControlAvailable": True, "NodeID": "N1",
                                  "NodeAddr": "10.0.0.2", "Cluster": {"ID": "C1"}}}  # fmt: skip
    assert Engine.from_info(info) == engine()
    assert swarm_action(engine()) == "use"
    with pytest.raises(ConfigError, match="worker"):
        swarm_action(engine(manager=False))
    for state in ("locked", "pending", "error"):
        with pytest.raises(DeployError, match=state):
            swarm_action(engine(state))
    assert init_argv(None) == ["swarm", "init"]
    assert init_argv("10.0.0.2") == ["swarm", "init", "--advertise-addr", "10.0.0.2"]


def test_labels_one_node_holds_both_roles_and_a_users_label_stays() -> None:
    assert label_plan([Node("N1", "m", {})], "N1") == [("N1", NETWORK_LABEL), ("N1", AGENTS_LABEL)]
    nodes = [Node("N1", "m", {}), Node("N2", "w1", {AGENTS_LABEL: "false"}), Node("N3", "w2", {})]
    assert label_plan(nodes, "N1") == [("N1", NETWORK_LABEL), ("N1", AGENTS_LABEL), ("N3", AGENTS_LABEL)]
    # the network role is already somewhere: not moved; a labelled swarm needs nothing
    nodes = [Node("N1", "m", {AGENTS_LABEL: "true"}), Node("N2", "w", {NETWORK_LABEL: "true", AGENTS_LABEL: "x"})]
    assert label_plan(nodes, "N1") == []
    with pytest.raises(DeployError, match="not among"):
        label_plan([Node("N2", "w", {})], "N1")


def test_images_missing_are_built_by_the_make_target_that_builds_them() -> None:
    config = {"name": "gaiamesh", "services": {
        "network": {"image": "gaiamesh-network:0.1.0", "build": {"context": "."}},
        "agent-search": {"image": "gaiamesh-agent:0.1.0", "build": {"context": "."}},
        "web": {"image": "gaiamesh-agent:0.1.0"},  # built by another service
        "ollama": {"image": "ollama/ollama:0.6.3"},  # the official one: not ours to build
        "job": {"build": {"context": "."}}}}  # fmt: skip
    built, other = project_images(config)
    assert built == ["gaiamesh-agent:0.1.0", "gaiamesh-job", "gaiamesh-network:0.1.0"]
    assert other == ["ollama/ollama:0.6.3"]
    assert make_targets(["gaiamesh-agent:0.1.0"], built, "reg:1") == ["images"]
    assert make_targets(["reg:1"], built, "reg:1") == ["registry-image"]
    assert make_targets([], built, "reg:1") == []


def test_our_registry_runs_when_registry_names_this_engine() -> None:
    here = engine(addr="10.0.0.2")
    assert runs_own_registry("127.0.0.1:5000", "auto", here)
    assert runs_own_registry("localhost:5000", "auto", here)
    assert runs_own_registry("10.0.0.2:5000", "auto", here)  # a test cluster: the manager's address
    assert not runs_own_registry("registry.lan:5000", "auto", here)  # the user's own
    assert not runs_own_registry("10.0.0.9:5000", "auto", here)
    assert runs_own_registry("registry.lan:5000", "yes", here)
    assert not runs_own_registry("127.0.0.1:5000", "no", here)
    with pytest.raises(ConfigError, match="HOST:PORT"):
        runs_own_registry("registry.lan", "auto", here)
    with pytest.raises(ConfigError, match="auto, yes or no"):
        runs_own_registry("127.0.0.1:5000", "maybe", here)
    argv = registry_run_argv("gaiamesh-registry:0.1.0", "0.0.0.0", 5000)
    assert argv[argv.index("-p") + 1] == "0.0.0.0:5000:5000"
    assert argv[argv.index("-v") + 1] == "gaiamesh-registry-data:/var/lib/docker-registry"
    assert argv[-1] == "gaiamesh-registry:0.1.0"
    argv = registry_run_argv("r", "::1", 5001)
    assert argv[argv.index("-p") + 1] == "[::1]:5001:5000"


def test_the_registry_container_is_run_started_or_waited_for() -> None:
    assert container_action(None) == "run"
    assert container_action({"Running": False}) == "start"
    assert container_action({"Running": True, "Health": {"Status": "starting"}}) == "wait"
    assert container_action({"Running": True, "Health": {"Status": "healthy"}}) == "ready"
    assert container_action({"Running": True}) == "ready"  # no healthcheck: running is all there is


def test_digests_from_push_output_or_repo_digests() -> None:
    output = f"The push refers to repository [127.0.0.1:5000/gaiamesh-agent]\n5f70bf18a086: Pushed\n0.1.0: digest: {A} size: 2417\n"
    assert pushed_digest(output) == A
    assert pushed_digest("error") is None
    assert repository("127.0.0.1:5000", "gaiamesh-agent:0.1.0") == "127.0.0.1:5000/gaiamesh-agent"
    assert repository("r:5000", "ollama/ollama:0.6.3") == "r:5000/ollama/ollama"
    assert repository("r:5000", "img") == "r:5000/img"
    # an image pushed to two registries: only this registry's digest is the one nodes pull
    digests = [f"registry.lan:5000/gaiamesh-agent@{B}", f"127.0.0.1:5000/gaiamesh-agent@{A}"]
    assert repo_digest(digests, "127.0.0.1:5000/gaiamesh-agent") == A
    assert repo_digest(digests, "127.0.0.1:5000/gaiamesh-network") is None
    text = digests_json({"gaiamesh-network:0.1.0": B, "gaiamesh-agent:0.1.0": A})
    assert parse_digests(text) == {"gaiamesh-agent:0.1.0": A, "gaiamesh-network:0.1.0": B}
    with pytest.raises(DeployError, match="not sha256"):
        digests_json({"x": "latest"})


def test_service_ls_replicas_and_what_is_still_starting() -> None:
    text = "gaiamesh_network 1/1\ngaiamesh_agent-search 1/2 (max 1 per node)\ngaiamesh_ollama 0/1\nnoise\n"
    services = parse_service_ls(text)
    assert services == {"gaiamesh_network": (1, 1), "gaiamesh_agent-search": (1, 2), "gaiamesh_ollama": (0, 1)}
    assert not_ready(services) == ["gaiamesh_agent-search", "gaiamesh_ollama"]
    assert progress_line(services, "gaiamesh") == "1/3 services running; waiting for agent-search 1/2, ollama 0/1"
    assert not_ready({"gaiamesh_x": (0, 0)}) == []


def test_the_state_file_records_per_engine_and_swarm_down_leaves_only_that_swarm(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    assert load_state(path) == {}
    made = Made("tcp://10.0.0.2:2375", "C1", "gaiamesh-registry", "", [["N1", NETWORK_LABEL]])
    save_state(path, {"E1": made, "E2": Made("unix:///var/run/docker.sock")})  # E2 made nothing: not kept
    assert load_state(path) == {"E1": made}
    assert made.made_swarm(engine(cluster="C1"))
    assert not made.made_swarm(engine(cluster="C2"))  # left and made again by hand since: not ours
    assert not Made().made_swarm(engine(cluster=""))
    # labels come off only when the swarm stays, and only on nodes still there
    assert labels_to_remove(made, engine(cluster="C1"), ["N1"]) == []
    assert labels_to_remove(made, engine(cluster="C2"), ["N1"]) == [("N1", NETWORK_LABEL)]
    assert labels_to_remove(made, engine(cluster="C2"), ["N9"]) == []
    path.write_text("[1]")
    with pytest.raises(ConfigError, match="not a swarm-up state file"):
        load_state(path)


def test_the_api_port_and_results_folder_come_from_the_stack() -> None:
    stack = {"services": {"network": {"ports": [{"target": 8080, "published": 8081, "mode": "host"}],
                                      "volumes": [{"type": "bind", "source": "/r", "target": "/results"}]}}}  # fmt: skip
    assert api_port(stack) == 8081
    assert results_folder(stack) == Path("/r")
    assert results_folder({"services": {"network": {}}}) is None
    with pytest.raises(ConfigError, match="publishes no port"):
        api_port({"services": {"network": {}}})


# --- the steps, against a fake docker --------------------------------------------------------------
class Fail(Exception):
    pass


class FakeDocker(Docker):
    """The docker CLI's answers from a small model of one engine: its swarm, nodes' labels,
    containers, volumes, images and a stack's services. Records every command."""

    def __init__(self, swarm: bool = False, images: tuple[str, ...] = (), ready: bool = True) -> None:
        self.calls: list[tuple[str, ...]] = []
        self.made: list[str] = []
        self.cluster = "C0" if swarm else ""
        self.labels: dict[str, dict[str, str]] = {"N1": {}} if swarm else {}
        self.containers: dict[str, dict[str, Any]] = {}
        self.volumes: set[str] = set()
        self.images = set(images)
        self.services: dict[str, tuple[int, int]] = {}
        self.ready = ready

    def make(self, target: str) -> None:
        self.made.append(target)
        self.images |= {"registry-image": {"gaiamesh-registry:0.1.0"},
                        "images": {"gaiamesh-agent:0.1.0", "gaiamesh-network:0.1.0"}}[target]  # fmt: skip

    def _run(self, args: tuple[str, ...]) -> subprocess.CompletedProcess[str]:  # type: ignore[override]
        self.calls.append(args)
        try:
            return subprocess.CompletedProcess(args, 0, self.answer(list(args)), "")
        except Fail as exc:
            return subprocess.CompletedProcess(args, 1, "", str(exc))

    def answer(self, a: list[str]) -> str:
        head = " ".join(a[:2])
        handler = getattr(self, "do_" + head.replace(" ", "_").replace("-", "_"), None) or getattr(
            self, "do_" + a[0], None
        )
        if handler is None:
            raise AssertionError(f"unexpected docker {a}")
        return str(handler(a))

    def do_info(self, a: list[str]) -> str:
        swarm = {"LocalNodeState": "active", "ControlAvailable": True, "NodeID": "N1", "NodeAddr": "10.0.0.2",
                 "Cluster": {"ID": self.cluster}} if self.cluster else {"LocalNodeState": "inactive"}  # fmt: skip
        return json.dumps({"ID": "E1", "Swarm": swarm})

    def do_swarm_init(self, a: list[str]) -> str:
        self.cluster, self.labels = "C1", {"N1": {}}
        return ""

    def do_swarm_leave(self, a: list[str]) -> str:
        self.cluster, self.labels, self.services = "", {}, {}
        return ""

    def do_node_ls(self, a: list[str]) -> str:
        return "\n".join(self.labels)

    def do_node_inspect(self, a: list[str]) -> str:
        return json.dumps([{"ID": n, "Description": {"Hostname": f"host-{n}"}, "Spec": {"Labels": self.labels[n]}}
                           for n in a[2:]])  # fmt: skip

    def do_node_update(self, a: list[str]) -> str:
        if a[2] == "--label-add":
            key, _, value = a[3].partition("=")
            self.labels[a[4]][key] = value
        else:
            self.labels[a[4]].pop(a[3])
        return ""

    def do_image_inspect(self, a: list[str]) -> str:
        if a[-1] not in self.images:
            raise Fail("No such image")
        return "[]"

    def do_container_inspect(self, a: list[str]) -> str:
        if a[-1] not in self.containers:
            raise Fail("No such container")
        return json.dumps(self.containers[a[-1]])

    def do_volume_inspect(self, a: list[str]) -> str:
        if a[-1] not in self.volumes:
            raise Fail("No such volume")
        return "{}"

    def do_volume_rm(self, a: list[str]) -> str:
        self.volumes.discard(a[-1])
        return ""

    def do_run(self, a: list[str]) -> str:
        assert a[-1] in self.images
        self.containers[a[a.index("--name") + 1]] = {"Running": True, "Health": {"Status": "healthy"}}
        self.volumes.add(a[a.index("-v") + 1].split(":")[0])
        return "cid"

    def do_rm(self, a: list[str]) -> str:
        del self.containers[a[-1]]
        return ""

    def do_tag(self, a: list[str]) -> str:
        self.images.add(a[2])
        return ""

    def do_push(self, a: list[str]) -> str:
        return f"0.1.0: digest: sha256:{'c' * 64} size: 1"

    def do_stack_deploy(self, a: list[str]) -> str:
        body = "\n".join(ln for ln in Path(a[3]).read_text().splitlines() if not ln.startswith("#"))
        for name, svc in json.loads(body)["services"].items():
            want = svc["deploy"].get("replicas", 1)
            self.services[f"{a[-1]}_{name}"] = (want if self.ready else 0, want)
        return ""

    def do_stack_ls(self, a: list[str]) -> str:
        return "gaiamesh\n" if self.services else ""

    def do_stack_rm(self, a: list[str]) -> str:
        self.services = {}
        return ""

    def do_service_ls(self, a: list[str]) -> str:
        return "\n".join(f"{n} {r}/{d}" for n, (r, d) in self.services.items())

    def do_service_inspect(self, a: list[str]) -> str:
        return "\n".join(f"{n} completed" for n in a[4:])  # the stack's services are never mid-update here

    def do_service_ps(self, a: list[str]) -> str:
        return "gaiamesh_ollama.1  host-N1  Rejected 3 seconds ago  No such image: 127.0.0.1:5000/..."

    def do_network(self, a: list[str]) -> str:
        return ""

    do_secret = do_config = do_network


def compose_config(tmp_path: Path) -> dict[str, Any]:
    keys = tmp_path / "keys"
    env = {"GAIAMESH_ACCESS_KEY": "k" * 32, "GAIAMESH_SESSION_SECRET": "s" * 32,
           "AGENTS": "0=search@agent-search:9000,4=search@agent-search-2:9004?,9=x@elsewhere:1"}  # fmt: skip
    agent_env = {"TOOL": "search", "NODE_ID": "0", "PORT": "9000"}
    return {"name": "gaiamesh", "services": {
        "network": {"image": "gaiamesh-network:0.1.0", "build": {"context": "."}, "environment": env,
                    "ports": [{"target": 8080, "published": 8080, "host_ip": "127.0.0.1"}],
                    "volumes": [{"type": "bind", "source": str(tmp_path / "results"), "target": "/results"},
                                {"type": "bind", "source": str(keys / "network.pem"), "target": "/keys/network.pem"},
                                {"type": "bind", "source": str(keys / "public.json"), "target": "/keys/public.json"}]},
        "agent-search": {"image": "gaiamesh-agent:0.1.0", "build": {"context": "."}, "environment": agent_env,
                         "volumes": [{"type": "bind", "source": str(keys / "0.pem"), "target": "/keys/0.pem"}]},
    }}  # fmt: skip


def options(tmp_path: Path, **kw: Any) -> UpOptions:
    return UpOptions(folder=tmp_path / "build", **kw)


def called(docker: FakeDocker, *prefix: str) -> list[tuple[str, ...]]:
    return [c for c in docker.calls if c[: len(prefix)] == prefix]


def test_swarm_up_makes_what_is_missing_and_swarm_down_undoes_exactly_that(tmp_path: Path) -> None:
    docker = FakeDocker(swarm=False, images=("gaiamesh-agent:0.1.0", "gaiamesh-network:0.1.0"))
    lines: list[str] = []
    stack = swarm_up(docker, options(tmp_path), compose_config(tmp_path), lines.append)
    assert called(docker, "swarm", "init") and docker.made == ["registry-image"]  # only what was missing
    assert docker.labels == {"N1": {NETWORK_LABEL: "true", AGENTS_LABEL: "true"}}
    assert called(docker, "run") and called(docker, "push", "127.0.0.1:5000/gaiamesh-agent:0.1.0")
    steps = [ln for ln in lines if ln.startswith("swarm-up [")]
    assert [ln.split("]")[0] for ln in steps] == [f"swarm-up [{n}/8" for n in range(1, 8)]
    assert "initialised swarm C1" in steps[0] and "swarm-down will leave it" in steps[0]
    # the files: digests, secrets (mode 0600, never in the stack file), the stack, the keys
    build = tmp_path / "build"
    digest = "sha256:" + "c" * 64
    assert parse_digests((build / "digests.json").read_text())["gaiamesh-agent:0.1.0"] == digest
    assert stack["services"]["agent-search"]["image"] == f"127.0.0.1:5000/gaiamesh-agent:0.1.0@{digest}"
    assert (build / "secrets" / "gaiamesh_access_key").stat().st_mode & 0o777 == 0o600
    assert "k" * 32 not in (build / "stack.yaml").read_text() and not any("k" * 32 in ln for ln in lines)
    agents = stack["services"]["network"]["environment"]["AGENTS"]
    assert agents == "0=search@dns:tasks.agent-search:9000,4=search@agent-search-2:9004?,9=x@elsewhere:1"
    assert (tmp_path / "keys" / "0.pem").is_file() and (tmp_path / "keys" / "network.pem").is_file()
    state = load_state(build / "state.json")["E1"]
    assert (state.cluster, state.registry_container, state.registry_volume) == ("C1", "gaiamesh-registry",
                                                                                "gaiamesh-registry-data")  # fmt: skip
    # a second swarm-up changes nothing, and still knows the swarm is its own
    docker.calls.clear()
    swarm_up(docker, options(tmp_path), compose_config(tmp_path), lines.append)
    assert not called(docker, "swarm", "init") and not called(docker, "run") and not called(docker, "node", "update")
    assert load_state(build / "state.json")["E1"].cluster == "C1"

    swarm_down(docker, options(tmp_path), lines.append)
    assert called(docker, "stack", "rm", "gaiamesh") and called(docker, "rm", "-f", "gaiamesh-registry")
    assert called(docker, "swarm", "leave", "--force") and docker.cluster == ""
    assert docker.volumes == {"gaiamesh-registry-data"}  # kept: the pushed layers (VOLUMES=1 removes it)
    assert load_state(build / "state.json")["E1"].registry_volume == "gaiamesh-registry-data"
    swarm_down(docker, options(tmp_path), lines.append, volumes=True)
    assert docker.volumes == set() and load_state(build / "state.json") == {}


def test_swarm_down_leaves_a_swarm_and_a_registry_it_did_not_make(tmp_path: Path) -> None:
    docker = FakeDocker(swarm=True, images=("gaiamesh-agent:0.1.0", "gaiamesh-network:0.1.0",
                                            "gaiamesh-registry:0.1.0"))  # fmt: skip
    docker.containers["gaiamesh-registry"] = {"Running": True, "Health": {"Status": "healthy"}}  # the user's
    docker.volumes.add("gaiamesh-registry-data")
    lines: list[str] = []
    swarm_up(docker, options(tmp_path), compose_config(tmp_path), lines.append)
    assert not called(docker, "swarm", "init") and not called(docker, "run")
    assert "not made here" in lines[0]
    swarm_down(docker, options(tmp_path), lines.append, volumes=True)
    assert not called(docker, "swarm", "leave") and not called(docker, "rm")
    assert "gaiamesh-registry" in docker.containers and docker.volumes == {"gaiamesh-registry-data"}
    assert docker.labels == {"N1": {}}  # the labels swarm-up set came off; the swarm stays
    assert called(docker, "stack", "rm")


def test_a_swarm_made_again_by_hand_is_not_left(tmp_path: Path) -> None:
    docker = FakeDocker(images=("gaiamesh-agent:0.1.0", "gaiamesh-network:0.1.0", "gaiamesh-registry:0.1.0"))
    swarm_up(docker, options(tmp_path), compose_config(tmp_path), print)
    docker.cluster = "C9"  # the user left that swarm and made another one since
    swarm_down(docker, options(tmp_path), print)
    assert not called(docker, "swarm", "leave")


def test_a_users_registry_is_not_started_and_a_stuck_service_is_named(tmp_path: Path) -> None:
    docker = FakeDocker(swarm=True, images=("gaiamesh-agent:0.1.0", "gaiamesh-network:0.1.0"), ready=False)
    with pytest.raises(DeployError, match=r"(?s)did not start within 0 s: gaiamesh_agent-search.*No such image"):
        swarm_up(docker, options(tmp_path, registry="registry.lan:5000", timeout=0), compose_config(tmp_path), print)
    assert not called(docker, "run") and docker.made == []  # no registry image needed either
    assert called(docker, "push", "registry.lan:5000/gaiamesh-network:0.1.0")


def test_an_image_no_make_target_builds_is_refused(tmp_path: Path) -> None:
    config = compose_config(tmp_path)
    config["services"]["ollama"] = {"image": "ollama/ollama:0.6.3"}
    docker = FakeDocker(swarm=True, images=("gaiamesh-agent:0.1.0", "gaiamesh-network:0.1.0"))
    with pytest.raises(DeployError, match="ollama/ollama:0.6.3 .pull or load"):
        swarm_up(docker, options(tmp_path), config, print)


# --- step 8: the bundled task through the API, with gaiamesh submit's code ------------------------
def test_the_run_is_the_task_make_up_runs_sent_by_submits_code(monkeypatch: pytest.MonkeyPatch) -> None:
    from gaiamesh.cli import runs
    from gaiamesh.settings import load_settings

    from ...conftest import ROOT

    monkeypatch.setenv("GAIAMESH_ENV_FILE", "")
    sent: list[Any] = []
    monkeypatch.setattr(runs, "submit_and_report", lambda url, settings, request, out: sent.append(request) or 0)
    settings = load_settings(task=ROOT / "tasks" / "solar-farm", access_key="k")
    assert runs.submit_task("http://10.0.0.2:8080", settings, None) == 0
    assert sent[0].name == "solar-farm" and sent[0].document and sent[0].question


def test_submit_refuses_without_an_access_key_and_a_silent_api_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    from gaiamesh.cli.deploy import _wait_for_api
    from gaiamesh.cli.runs import submit_and_report
    from gaiamesh.service.models import RunRequest
    from gaiamesh.settings import Settings

    monkeypatch.delenv("GAIAMESH_ACCESS_KEY", raising=False)
    with pytest.raises(ConfigError, match="GAIAMESH_ACCESS_KEY is not set"):
        submit_and_report("http://127.0.0.1:9", Settings(_env_file=None), RunRequest(task="solar-farm"), None)
    with pytest.raises(DeployError, match="API_HOST must be an address of the node"):
        _wait_for_api("http://127.0.0.1:9", 0)


def test_a_service_being_updated_counts_as_not_running_yet() -> None:
    from gaiamesh.deploy.swarmup import not_ready, still_updating

    services = {"gm_network": (1, 1), "gm_agent-search": (1, 1), "gm_ollama": (1, 1)}
    states = "gm_network updating\ngm_agent-search completed\ngm_ollama \n"
    assert not_ready(still_updating(services, states)) == ["gm_network"]
