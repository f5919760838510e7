"""Local mode's choices before anything starts: the team's ports, its mesh token, its web."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from gaiamesh.agents.teams import agent_specs, default_agents
from gaiamesh.deploy.local import own_team
from gaiamesh.errors import PortTaken
from gaiamesh.settings import load_settings


def test_a_team_gets_free_ports_and_a_token_of_its_own_each_time() -> None:
    s = load_settings()
    one, two = own_team(s), own_team(s)
    assert one.mesh_token and two.mesh_token and one.mesh_token != two.mesh_token
    assert one.agents != default_agents()  # not 9000-9003, where a compose stack publishes
    assert [a.tool for a in agent_specs(one)] == ["search", "extract", "triple", "reason"]


def test_a_given_base_port_that_is_taken_stops_before_anything_starts() -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        with pytest.raises(PortTaken) as caught:
            own_team(load_settings(), base_port=port)
        assert f"127.0.0.1:{port}" in str(caught.value) and "--base-port" in str(caught.value)
        with pytest.raises(PortTaken, match="AGENTS"):
            own_team(load_settings(agents=f"0=search@127.0.0.1:{port}"))


def test_the_orchestrated_web_moves_with_the_team_unless_web_url_is_set() -> None:
    s = own_team(load_settings(strategy="orchestrated"))
    assert s.web_url != "http://127.0.0.1:8090" and s.web_url.startswith("http://127.0.0.1:")
    mine = own_team(load_settings(strategy="orchestrated", web_url="http://127.0.0.1:8555"))
    assert mine.web_url == "http://127.0.0.1:8555"


def test_a_port_handed_out_is_not_handed_out_again_before_it_is_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel sees a port as free until its process binds it: a second draw in between, even
    of the very same base, must not get it or the native ports after it (a CI run's service was
    given an agent's native port that way)."""
    from gaiamesh.deploy import local

    first = local.free_port_block(3)
    native = local.NATIVE_PORT_OFFSET
    # its ports and its native ones, then a port this process never handed out (a long test
    # session has handed out many: a fixed one could be among them) and free now
    free = next(p for p in range(first + 5000, first + 9000) if p not in local._HANDED and local._binds(p))
    draws = iter([first, first + native + 1, first + 2, free])
    monkeypatch.setattr(local.random, "randrange", lambda low, high: next(draws))
    assert local.free_port() == free


def test_free_ports_come_from_GAIAMESH_PORTS_where_it_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two commands side by side (the suite's two workers) each pick ports from a range of their own."""
    from gaiamesh.deploy import local
    from gaiamesh.errors import ConfigError

    monkeypatch.setenv("GAIAMESH_PORTS", "15000-17500")
    for _ in range(20):
        base = local.free_port_block(4)
        assert 15000 <= base and base + local.NATIVE_PORT_OFFSET + 4 <= 17500
    monkeypatch.setenv("GAIAMESH_PORTS", "17500-15000")
    with pytest.raises(ConfigError, match="GAIAMESH_PORTS='17500-15000': expected LOW-HIGH"):
        local.free_port()


def test_a_child_gets_each_secret_once_where_its_parent_read_it_from_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # swarm's way (NAME_FILE, a secret's file): the child gets the value, and not the file too,
    # which its own settings would refuse (NAME and NAME_FILE both set)
    from gaiamesh.deploy.local import child_env

    (tmp_path / "token").write_text("token-from-a-swarm-secret-0123456789\n")
    monkeypatch.setenv("GAIAMESH_ENV_FILE", "")
    monkeypatch.delenv("GAIAMESH_MESH_TOKEN", raising=False)
    monkeypatch.setenv("GAIAMESH_MESH_TOKEN_FILE", str(tmp_path / "token"))
    parent = load_settings()
    env = child_env(parent)
    assert env["GAIAMESH_MESH_TOKEN"] == "token-from-a-swarm-secret-0123456789" and "GAIAMESH_MESH_TOKEN_FILE" not in env
    with monkeypatch.context() as m:
        for name in [n for n in os.environ if n.startswith(("GAIAMESH_", "OPENAI_"))]:
            m.delenv(name)
        for name, value in env.items():
            m.setenv(name, value)
        assert load_settings().mesh_token == parent.mesh_token
