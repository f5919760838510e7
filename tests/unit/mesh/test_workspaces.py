"""An agent's run workspace fetched by the relay: the signed request and the tar (pure), then
the relay archiving agents whose workspaces are not on its host, over real HTTP."""

from __future__ import annotations

import io
import json
import tarfile
import time
from pathlib import Path

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from websockets.asyncio.server import Request, ServerConnection, serve

from gaiamesh.agents.teams import agent_specs, lineup
from gaiamesh.errors import Invalid, NotFound, TooLarge, Unauthorized
from gaiamesh.evaluation.finish import run_and_finish
from gaiamesh.mesh import collect, workspaces
from gaiamesh.mesh.frames import Announcement
from gaiamesh.mesh.relay import MeshNetwork
from gaiamesh.settings import AgentSpec
from gaiamesh.tasks import load_task

from ...conftest import TASKS, free_port, free_port_block
from .test_relay import TOOLS, assert_consistent, mesh, settings_for

NOW = 1_800_000_000.0


def test_a_signed_request_is_checked_against_the_relays_key_its_agent_and_run() -> None:
    key = Ed25519PrivateKey.generate()
    header = workspaces.sign(key, "2", "run1", NOW)
    workspaces.check(header, key.public_key(), "2", "run1", NOW + 5)  # no exception: accepted
    refusals = [
        (header, key.public_key(), "3", "run1", NOW),  # another agent's
        (header, key.public_key(), "2", "run2", NOW),  # another run's
        (header, Ed25519PrivateKey.generate().public_key(), "2", "run1", NOW),  # not the relay's key
        (header, key.public_key(), "2", "run1", NOW + workspaces.WINDOW_S + 1),  # copied later
        (None, key.public_key(), "2", "run1", NOW),
        ("Bearer abc", key.public_key(), "2", "run1", NOW),
        (header, None, "2", "run1", NOW),  # the agent has no keys to check with
    ]
    for args in refusals:
        with pytest.raises(Unauthorized):
            workspaces.check(*args)


def test_only_a_plain_run_id_names_a_workspace() -> None:
    assert workspaces.run_of("/runs/ab12-cd_34/workspace") == "ab12-cd_34"
    for path in ("/runs/../x/workspace", "/runs/a/b/workspace", "/runs//workspace", "/ws", "/runs/a/workspace/"):
        assert workspaces.run_of(path) is None, path


def test_pack_and_unpack_carry_a_folder_and_refuse_what_escapes(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "agent.log").write_text("one\n")
    (src / "sub" / "memory.json").write_text("{}")
    (src / "link").symlink_to("/etc/passwd")
    blob = workspaces.pack(src)
    workspaces.unpack(blob, tmp_path / "dest")
    assert (tmp_path / "dest" / "agent.log").read_text() == "one\n"
    assert (tmp_path / "dest" / "sub" / "memory.json").read_text() == "{}"
    assert not (tmp_path / "dest" / "link").is_symlink()  # left out, never followed
    linked = io.BytesIO()
    with tarfile.open(fileobj=linked, mode="w:gz") as tar:
        info = tarfile.TarInfo("memory.json")
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(info)
    with pytest.raises(Invalid):
        workspaces.unpack(linked.getvalue(), tmp_path / "d5")
    assert not (tmp_path / "d5" / "memory.json").is_symlink()
    with pytest.raises(NotFound):
        workspaces.pack(tmp_path / "absent")
    with pytest.raises(TooLarge):
        workspaces.pack(src, limit=3)
    with pytest.raises(TooLarge):
        workspaces.unpack(blob, tmp_path / "d2", limit=3)
    with pytest.raises(Invalid):
        workspaces.unpack(b"not a tar", tmp_path / "d3")
    evil = io.BytesIO()
    with tarfile.open(fileobj=evil, mode="w:gz") as tar:
        info = tarfile.TarInfo("../outside.txt")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"hi"))
    with pytest.raises(Invalid):
        workspaces.unpack(evil.getvalue(), tmp_path / "d4")
    assert not (tmp_path / "outside.txt").exists()


async def test_the_relay_archives_workspaces_that_are_not_on_its_host(tmp_path: Path) -> None:
    """Agents write under one root, the relay reads another (as on a swarm): it fetches each
    workspace from its agent, and the archive and protocol_cost are what a shared root gives."""
    s = settings_for(tmp_path, free_port_block(4), TOOLS, workspace_root=tmp_path / "agents")
    relay = s.model_copy(update={"workspace_root": tmp_path / "relay"})
    async with mesh(s):
        network = MeshNetwork(relay, load_task(TASKS / "solar-farm"), tmp_path / "out", reporter=lambda _: None, lineup=lineup(relay))
        m = (await run_and_finish(network)).model_dump()
        # the agents are still up: a request that is not the relay's is refused, and says why
        url = f"http://127.0.0.1:{agent_specs(s)[0].port}/runs/{m['run_id']}/workspace"
        forged = workspaces.sign(Ed25519PrivateKey.generate(), "0", m["run_id"], time.time())
        async with httpx.AsyncClient() as client:
            refused = [await client.get(url), await client.get(url, headers={"Authorization": forged})]
    assert m["status"] == "ok" and m["workspaces_missing"] == {}
    assert not (tmp_path / "relay").exists() and not (tmp_path / "out" / ".workspaces").exists()
    with tarfile.open(tmp_path / "out/run_artifacts.tar.gz") as tar:
        names = set(tar.getnames())
        memory = json.load(tar.extractfile("workspaces/0/memory.json"))  # type: ignore[arg-type]
    for node in "0123":
        assert {f"workspaces/{node}/agent.log", f"workspaces/{node}/memory.json"} <= names, names
    local = json.loads((tmp_path / "agents" / "0" / m["run_id"] / "memory.json").read_text())
    assert memory == local
    assert m["encode_us_p50"] is not None  # the agents' encode times, read from the fetched memory
    assert_consistent(tmp_path / "out", m)
    assert [r.status_code for r in refused] == [401, 401]


async def test_an_agent_it_cannot_fetch_from_is_named_with_the_reason(tmp_path: Path) -> None:
    s = settings_for(tmp_path, free_port_block(4), TOOLS, workspace_root=tmp_path / "agents")
    (tmp_path / "keys" / "network.pem").unlink()  # a relay without its key cannot ask
    relay = s.model_copy(update={"workspace_root": tmp_path / "relay"})
    async with mesh(s):
        m = (await run_and_finish(MeshNetwork(relay, load_task(TASKS / "solar-farm"), tmp_path / "out",
                               reporter=lambda _: None, lineup=lineup(relay)))).model_dump()  # fmt: skip
    assert m["status"] == "ok"
    assert sorted(m["workspaces_missing"]) == list("0123")
    assert all("no key" in why for why in m["workspaces_missing"].values())
    with tarfile.open(tmp_path / "out/run_artifacts.tar.gz") as tar:
        assert not [n for n in tar.getnames() if n.startswith("workspaces/")]


async def test_a_replica_handed_no_work_has_nothing_to_archive_and_is_not_missing(tmp_path: Path) -> None:
    s = settings_for(tmp_path, free_port_block(8), TOOLS * 2, workspace_root=tmp_path / "agents", routing="share")
    relay = s.model_copy(update={"workspace_root": tmp_path / "relay"})
    async with mesh(s):
        m = (await run_and_finish(MeshNetwork(relay, load_task(TASKS / "solar-farm"), tmp_path / "out",
                               reporter=lambda _: None, lineup=lineup(relay)))).model_dump()  # fmt: skip
    assert m["status"] == "ok" and m["workspaces_missing"] == {}
    kept = {p.name for p in (tmp_path / "agents").iterdir() if (p / m["run_id"]).is_dir()}
    with tarfile.open(tmp_path / "out/run_artifacts.tar.gz") as tar:
        archived = {n.split("/")[1] for n in tar.getnames() if n.count("/") >= 1 and n.startswith("workspaces/")}
    assert archived == kept and 4 <= len(kept) < 8, (archived, kept)


async def test_only_an_agent_that_sent_frames_can_be_missing(tmp_path: Path) -> None:
    specs = [AgentSpec(str(n), "search", "127.0.0.1", 1) for n in range(3)]
    (tmp_path / "ws" / "0" / "run1").mkdir(parents=True)
    found, missing = await collect.gather(specs, tmp_path / "ws", "run1", tmp_path / "staging", None, gone={"2"},
                                          sent={"0", "1"})  # fmt: skip
    assert found == {"0": tmp_path / "ws" / "0" / "run1"}
    assert list(missing) == ["1"]  # "2" left, but sent nothing: it had nothing to lose


async def test_the_relay_asks_no_workspace_of_what_it_did_not_admit(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A process at agent 1's address that proves nothing (bench-attacks' rogue) is refused; the
    run's end then asks it for nothing: no signed request to a stranger, no warning about it."""
    s = settings_for(tmp_path, free_port_block(4), TOOLS, mesh_token="tok")
    rogue = agent_specs(s)[1]
    asked: list[str] = []

    def record(conn: ServerConnection, request: Request) -> None:
        asked.append(request.path)

    async def take(ws: ServerConnection) -> None:
        await ws.wait_closed()

    said = Announcement(node_id="1", tool=rogue.tool, consumes=frozenset({"search_docs"})).headers()
    port = free_port()
    async with serve(take, "127.0.0.1", port, process_request=record,
                     process_response=lambda conn, req, resp: resp.headers.update(said)):  # fmt: skip
        moved = ",".join(f"{a.node_id}={a.tool}@{a.host}:{port if a.node_id == rogue.node_id else a.port}" for a in agent_specs(s))
        relay = s.model_copy(update={"agents": moved})
        async with mesh(s):
            m = await run_and_finish(MeshNetwork(relay, load_task(TASKS / "solar-farm"), tmp_path / "out", quiet=True,
                                  lineup=lineup(relay)))  # fmt: skip
    assert m.status == "connect_failed" and "did not prove this run's mesh token" in (m.error or "")
    assert asked == ["/ws"] and m.workspaces_missing == {}
    assert "not archived" not in caplog.text


async def test_a_plain_websocket_server_asked_for_a_workspace_is_named_in_our_words(tmp_path: Path) -> None:
    """A bench's plain WebSocket server that the relay admitted (no mesh token, nothing announced)
    answers a workspace request 426: said as what it is, not as its library's advice to browsers."""

    async def take(ws: ServerConnection) -> None:
        await ws.wait_closed()

    port = free_port_block(1)
    async with serve(take, "127.0.0.1", port):
        spec = AgentSpec("0", "search", "127.0.0.1", port)
        _, missing = await collect.gather([spec], tmp_path / "ws", "run1", tmp_path / "staging",
                                          Ed25519PrivateKey.generate(), gone=set(), sent={"0"})  # fmt: skip
    assert missing == {"0": f"what answers at 127.0.0.1:{port} serves only WebSocket there: it is not a Gaia Mesh agent"}
