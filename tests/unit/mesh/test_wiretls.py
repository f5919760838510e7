"""TLS on the relay's wire (mesh/wiretls.py): real MeshAgents (fast fake model) serving TLS with
the certificates of the local CA, the real relay connecting, and clients that should be refused."""

from __future__ import annotations

import asyncio
import shutil
import ssl
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidHandshake, InvalidStatus

from gaiamesh.agents.teams import agent_specs, lineup
from gaiamesh.errors import ConfigError
from gaiamesh.evaluation.finish import run_and_finish
from gaiamesh.mesh import wiretls
from gaiamesh.mesh.localtls import NODE_URI, node_cert_file
from gaiamesh.mesh.protocols import generate_keys
from gaiamesh.mesh.relay import MeshNetwork
from gaiamesh.settings import Settings
from gaiamesh.tasks import load_task

from ...conftest import TASKS, free_port_block
from .test_relay import TOOLS, mesh, settings_for


def test_a_certificate_names_its_node_and_only_the_relay_is_served_under_mtls() -> None:
    assert wiretls.node_of({"subjectAltName": (("DNS", "x"), ("URI", NODE_URI + "3"))}) == "3"
    assert wiretls.node_of({"subjectAltName": (("URI", "https://elsewhere"),)}) is None
    assert wiretls.node_of(None) is None and wiretls.node_of({}) is None
    assert wiretls.refusal("mtls", "network") is None
    assert "no certificate" in str(wiretls.refusal("mtls", None))
    assert "node '2', not the relay" in str(wiretls.refusal("mtls", "2"))
    assert wiretls.refusal("tls", None) is None and wiretls.refusal("off", None) is None


def test_missing_certificates_are_a_configuration_error_naming_the_file(tmp_path: Path) -> None:
    assert wiretls.agent_context("off", tmp_path, "0") is None
    with pytest.raises(ConfigError, match="local-ca.pem"):
        wiretls.relay_context("tls", tmp_path)


async def _run(settings: Settings, agents: Settings | None = None) -> dict[str, Any]:
    async with mesh(agents or settings):
        m = await run_and_finish(MeshNetwork(settings, load_task(TASKS / "solar-farm"), settings.workspace_root.parent / "out",
                              reporter=lambda _: None, lineup=lineup(settings)))  # fmt: skip
    return m.model_dump()


@pytest.mark.parametrize("mode", ["tls", "mtls"])
async def test_a_run_over_tls_answers_and_counts_as_the_same_run_in_the_clear(tmp_path: Path, mode: str) -> None:
    clear = await _run(settings_for(tmp_path / "clear", free_port_block(4), TOOLS))
    secure = await _run(settings_for(tmp_path / mode, free_port_block(4), TOOLS, wire_tls=mode))
    assert clear["status"] == secure["status"] == "ok"
    assert secure["prediction"] == clear["prediction"] == "148 megawatts"
    # the frames the protocol sent are the same bytes; TLS's own are below them
    assert (secure["pkt_cnt"], secure["bytes_tx"]) == (clear["pkt_cnt"], clear["bytes_tx"])
    assert secure["workspaces_missing"] == {}


async def test_agents_whose_certificates_another_ca_signed_are_refused(tmp_path: Path) -> None:
    relay = settings_for(tmp_path, free_port_block(4), TOOLS, wire_tls="tls", connect_timeout=15)
    other = generate_keys(tmp_path / "other-ca", ["network", "0", "1", "2", "3"])
    m = await _run(relay, relay.model_copy(update={"keys_dir": other}))
    assert m["status"] == "connect_failed" and m["pkt_cnt"] == 0
    assert "no certificate of this mesh's CA" in str(m["error"])


async def test_an_agent_showing_another_nodes_certificate_is_refused(tmp_path: Path) -> None:
    relay = settings_for(tmp_path, free_port_block(4), TOOLS, wire_tls="tls", connect_timeout=15)
    swapped = tmp_path / "swapped"
    shutil.copytree(relay.keys_dir, swapped)
    shutil.copy(node_cert_file(relay.keys_dir, "1"), node_cert_file(swapped, "0"))  # agent 0 holds node 1's
    m = await _run(relay, relay.model_copy(update={"keys_dir": swapped}))
    assert m["status"] == "connect_failed" and m["pkt_cnt"] == 0
    assert "certificate of node '1', not of node '0'" in str(m["error"])


async def test_under_mtls_an_agent_serves_health_to_anyone_and_work_to_the_relay_only(tmp_path: Path) -> None:
    s = settings_for(tmp_path, free_port_block(4), TOOLS, wire_tls="mtls")
    port, keys = agent_specs(s)[0].port, s.keys_dir
    anyone = ssl.create_default_context(cafile=keys / "local-ca.pem")
    anyone.check_hostname = False
    agent_two = ssl.create_default_context(cafile=keys / "local-ca.pem")
    agent_two.check_hostname = False
    agent_two.load_cert_chain(node_cert_file(keys, "2"))  # an agent's certificate, not the relay's
    async with mesh(s):
        async with httpx.AsyncClient(verify=anyone) as http:
            health = await _until_up(http, f"https://127.0.0.1:{port}/health")
            assert health.status_code == 200
        for context, words in ((anyone, "showed no certificate"), (agent_two, "names node '2', not the relay")):
            with pytest.raises(InvalidStatus) as refused:
                async with connect(f"wss://127.0.0.1:{port}/ws", ssl=context):
                    pass
            assert refused.value.response.status_code == 403 and words in refused.value.response.body.decode()
        with pytest.raises((InvalidHandshake, OSError)):  # plain text on a TLS port: no WebSocket at all
            async with connect(f"ws://127.0.0.1:{port}/ws", open_timeout=5):
                pass


async def _until_up(http: httpx.AsyncClient, url: str) -> httpx.Response:
    """``url``'s answer once the agent listens (it starts beside this test, as the relay's own
    connect finds it: trying again with a back-off)."""
    for _ in range(50):
        try:
            return await http.get(url)
        except httpx.ConnectError:
            await asyncio.sleep(0.1)  # back-off while the agent binds, as connect_agent does
    raise AssertionError(f"nothing answered at {url}")
