"""The test swarm's plan: node names, fixed addresses, roles and the engines' run flags."""

from __future__ import annotations

import pytest

from gaiamesh.deploy.cluster import LABEL, ClusterSpec, network_argv, node_argv, on
from gaiamesh.errors import ConfigError


def test_nodes_get_fixed_addresses_inside_the_subnet_and_past_its_gateway() -> None:
    spec = ClusterSpec(name="t", nodes=3, subnet="10.9.8.0/24")
    assert [spec.address(i) for i in (1, 2, 3)] == ["10.9.8.11", "10.9.8.12", "10.9.8.13"]
    assert spec.docker_host(2) == "tcp://10.9.8.12:2375"
    assert on(spec, 3, "info") == ["docker", "-H", "tcp://10.9.8.13:2375", "info"]


def test_the_manager_runs_the_network_service_and_workers_run_agents() -> None:
    spec = ClusterSpec(nodes=3)
    assert spec.labels(1) == ["gaiamesh.network=true", "gaiamesh.agents=false"]
    assert spec.labels(2) == spec.labels(3) == ["gaiamesh.network=false", "gaiamesh.agents=true"]
    assert ClusterSpec(nodes=1).labels(1) == ["gaiamesh.network=true", "gaiamesh.agents=true"]


def test_a_node_runs_without_privileged_and_with_what_a_nested_engine_needs() -> None:
    spec = ClusterSpec(name="c", nodes=2)
    argv = node_argv(spec, 2)
    assert "--privileged" not in argv
    pairs = set(zip(argv, argv[1:], strict=False))
    assert ("--cap-drop", "SYS_RESOURCE") in pairs and ("--cap-add", "ALL") in pairs
    assert ("--device", "/dev/fuse") in pairs and ("-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw") in pairs
    assert ("--ip", spec.address(2)) in pairs and ("--name", "c-2") in pairs
    assert ("--label", f"{LABEL}=c") in pairs and argv[-1] == spec.image
    assert network_argv(spec)[-1] == "c" and f"{LABEL}=c" in network_argv(spec)


@pytest.mark.parametrize("kw", [{"nodes": 0}, {"nodes": 10}, {"subnet": "10.0.0.0/29"}])
def test_a_cluster_that_cannot_be_made_is_refused(kw: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        ClusterSpec(**kw)  # type: ignore[arg-type]


def test_only_the_manager_sees_the_checkout_at_its_own_path() -> None:
    spec = ClusterSpec(name="c", nodes=2, checkout="/src/gm")
    assert "/src/gm:/src/gm" in node_argv(spec, 1)
    assert "/src/gm:/src/gm" not in node_argv(spec, 2)
