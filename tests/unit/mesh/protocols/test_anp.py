"""ANP on its own wire: the SDK's FastANP server (in an agent process of its own) and the SDK's
authenticator in our client, DID-WBA checked by the SDK's verifier, the relay's DID document
resolved over HTTPS from a DID host of the test's (a local CA, trusted through SSL_CERT_FILE)."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from anp.anp_crawler.anp_client import ANPClient
from anp.authentication import DIDWbaAuthHeader
from anp.authentication.did_wba import validate_did_document_binding
from anp.openanp import RemoteAgent
from anp.proof import Rfc9421OriginProofGenerationOptions, generate_rfc9421_origin_proof
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from starlette.types import ASGIApp, Receive, Scope, Send

import gaiamesh
from gaiamesh.deploy.local import free_port
from gaiamesh.mesh.frames import PacketType, make_packet
from gaiamesh.mesh.localtls import issue_tls
from gaiamesh.mesh.native import NativeClient, Peer, Undelivered, binding
from gaiamesh.mesh.protocols import canonical_json, generate_keys
from gaiamesh.mesh.protocols.anp.client import AnpClient
from gaiamesh.mesh.protocols.anp.did import did_host_app, publish_did, relay_document_path
from gaiamesh.mesh.protocols.anp.envelope import direct_send
from gaiamesh.mesh.protocols.signed import SigningKeyError

AGENT = Path(__file__).with_name("anp_agent.py")
SRC = Path(next(iter(gaiamesh.__path__))).resolve().parent  # this checkout's src, for the agent process


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    keys = generate_keys(tmp_path_factory.mktemp("keys"), ["network", "3", "7"])
    issue_tls(keys, ["localhost"])
    return keys


@dataclass
class DidHost:
    """The relay's DID host, over TLS, counting the documents it serves."""

    port: int
    fetched: list[str] = field(default_factory=list)

    def counting(self, app: ASGIApp) -> ASGIApp:
        async def counted(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                self.fetched.append(scope["path"])
            await app(scope, receive, send)

        return counted


@pytest.fixture(scope="module")
def did_host(keys: Path) -> Iterator[DidHost]:
    host = DidHost(free_port())
    publish_did(keys, f"localhost:{host.port}")
    config = uvicorn.Config(
        host.counting(did_host_app(keys)),
        host="127.0.0.1",
        port=host.port,
        log_level="warning",
        ssl_certfile=str(keys / "local-tls.pem"),
        ssl_keyfile=str(keys / "local-tls-key.pem"),
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "the DID host did not start"
    yield host
    server.should_exit = True
    thread.join(timeout=5)


@pytest.fixture(scope="module")
def agent(keys: Path, did_host: DidHost, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Agent 3's ANP server, on a real uvicorn socket, in a process whose SSL_CERT_FILE trusts
    the local CA (and nothing here makes the SDK trust it any other way)."""
    port, log = free_port(), tmp_path_factory.mktemp("agent") / "agent.log"
    env = {**os.environ, "SSL_CERT_FILE": str(keys / "local-trust.pem"), "PYTHONPATH": str(SRC)}
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, str(AGENT), str(keys), "3", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}/anp"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                if httpx.get(base + "/ad.json", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def packet(question: str, seq: int = 1) -> dict[str, Any]:
    return make_packet(
        PacketType.SEARCH_DOCS,
        {"passages": [], "n_chunks": 0},
        run_id="r1",
        src="network",
        seq=seq,
        question=question,
    ).to_dict()


def reply(text: str, seq: int) -> bytes:
    """What the fake agent (anp_agent.py) answers."""
    made = make_packet(
        PacketType.EVENTS, {"facts": [{"text": text, "score": 1.0}]}, run_id="r1", src="3", seq=seq
    )
    return canonical_json(made.to_dict())


async def send_all(client: NativeClient, blob: bytes) -> list[bytes]:
    return [frame async for frame in client.send(blob)]


def relay_key(keys: Path, node: str = "network") -> Ed25519PrivateKey:
    key = serialization.load_pem_private_key((keys / f"{node}.pem").read_bytes(), password=None)
    assert isinstance(key, Ed25519PrivateKey)
    return key


def relay_did(keys: Path) -> str:
    did: str = json.loads(relay_document_path(keys).read_text())["id"]
    return did


# --- the binding, through our client -------------------------------------------------------------
def test_the_binding_is_anp_at_its_mount_and_does_not_stream() -> None:
    made = binding("anp")
    assert (made.name, made.inner, made.mount, made.streams) == ("anp", "json", "/anp", False)


async def test_frames_round_trip_through_our_client(keys: Path, agent: str) -> None:
    async with httpx.AsyncClient(timeout=10) as http:
        client = binding("anp").client(Peer(agent, "3", "r1", keys), http)
        assert isinstance(client, AnpClient)
        await client.connect()
        ad = (await http.get(agent + "/ad.json")).json()
        assert client.agent_did == ad["did"] and ad["did"].endswith(
            ":anp:agents:3:" + ad["did"].split(":")[-1]
        )
        assert await send_all(client, canonical_json(packet("echo"))) == [reply("ECHO", 2)]
        assert await send_all(client, canonical_json(packet("two"))) == [reply("TWO", 2), reply("SECOND", 3)]
        assert await send_all(client, canonical_json(packet("silent"))) == []
        assert client.auth.tokens, "the agent's Bearer token is kept for the next requests"


async def test_a_packet_the_agent_refuses_is_undelivered_with_the_json_rpc_error(
    keys: Path, agent: str
) -> None:
    async with httpx.AsyncClient(timeout=10) as http:
        client = binding("anp").client(Peer(agent, "3", "r1", keys), http)
        with pytest.raises(
            Undelivered, match=r"JSON-RPC error -32602 Invalid params: .*unknown packet type 'nonsense'"
        ):
            await send_all(client, canonical_json({**packet("echo"), "type": "nonsense"}))
        assert await send_all(client, canonical_json(packet("echo"))) == [reply("ECHO", 2)]


async def test_an_agent_that_is_not_there_or_not_who_it_should_be_is_undelivered(
    keys: Path, agent: str
) -> None:
    async with httpx.AsyncClient(timeout=5) as http:
        gone = binding("anp").client(Peer(f"http://127.0.0.1:{free_port()}/anp", "3", "r1", keys), http)
        with pytest.raises(Undelivered, match="DID document of '3': ConnectError"):
            await send_all(gone, canonical_json(packet("echo")))
        impostor = binding("anp").client(Peer(agent, "7", "r1", keys), http)  # agent 3 has no document of 7's
        with pytest.raises(Undelivered, match="DID document of '7': HTTP 404"):
            await impostor.connect()


def test_the_client_needs_the_relays_published_did(keys: Path, tmp_path: Path) -> None:
    for name in ("network.pem", "public.json"):
        shutil.copy(keys / name, tmp_path / name)
    with pytest.raises(SigningKeyError, match="no DID document of the relay"):
        binding("anp").client(Peer("http://127.0.0.1:9/anp", "3", "r1", tmp_path), httpx.AsyncClient())
    with pytest.raises(SigningKeyError, match="names a host, not an IP"):
        publish_did(tmp_path, "127.0.0.1:8443")


# --- what crosses the wire ---------------------------------------------------------------------
@dataclass
class Tap:
    """A counting TCP proxy in front of the agent: connections, and bytes each way."""

    target: int
    connections: int = 0
    up: bytearray = field(default_factory=bytearray)
    down: bytearray = field(default_factory=bytearray)
    pipes: set[asyncio.Task[Any]] = field(default_factory=set)

    async def serve(self) -> asyncio.Server:
        return await asyncio.start_server(self._accept, "127.0.0.1", 0)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        task = asyncio.current_task()
        if task is not None:
            self.pipes.add(task)
        agent_reader, agent_writer = await asyncio.open_connection("127.0.0.1", self.target)
        await asyncio.gather(
            self._pipe(reader, agent_writer, self.up), self._pipe(agent_reader, writer, self.down)
        )

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, count: bytearray) -> None:
        while data := await reader.read(65536):
            count += data
            writer.write(data)
            await writer.drain()
        writer.close()


@pytest.fixture
async def tap(agent: str) -> AsyncIterator[tuple[Tap, str]]:
    counted = Tap(int(agent.split(":")[2].split("/")[0]))
    server = await counted.serve()
    yield counted, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/anp"
    server.close()
    await asyncio.wait(counted.pipes, timeout=5)  # the client has closed: each pipe ends at EOF


async def test_first_request_signs_and_costs_the_did_fetch_then_a_bearer_token_on_one_connection(
    keys: Path, did_host: DidHost, tap: tuple[Tap, str]
) -> None:
    counted, base = tap
    sizes: list[tuple[str, int, int]] = []
    async with httpx.AsyncClient(timeout=10) as http:
        client = binding("anp").client(Peer(base, "3", "r1", keys), http)
        await client.connect()  # the agent's DID document, at the tap's address it names
        sizes.append(("connect (GET did.json)", len(counted.up), len(counted.down)))
        fetched, requests = len(did_host.fetched), []
        for n in range(5):
            mark = len(counted.up), len(counted.down)
            assert await send_all(client, canonical_json(packet("echo", seq=n))) == [reply("ECHO", n + 1)]
            requests.append(bytes(counted.up[mark[0] :]))
            sizes.append((f"direct.send #{n + 1}", len(counted.up) - mark[0], len(counted.down) - mark[1]))
            if n == 0:
                assert len(did_host.fetched) > fetched, (
                    "the first request makes the agent fetch the relay's DID"
                )
                fetched = len(did_host.fetched)
    assert counted.connections == 1, "httpx keeps the one connection for the DID fetch and every frame"
    assert (
        b"\r\nsignature-input: sig1=" in requests[0].lower()
        and b"content-digest: sha-256=" in requests[0].lower()
    )
    assert all(
        b"\r\nauthorization: bearer " in r.lower() and b"signature-input" not in r.lower()
        for r in requests[1:]
    )
    assert len(did_host.fetched) == fetched, "later requests carry the token: no DID fetch"
    one = len(canonical_json(packet("echo")))
    print(
        f"\nanp native, packet {one} B up / {len(reply('ECHO', 1))} B down, connections {counted.connections}:"
    )
    for what, up, down in sizes:
        print(f"  {what}: {up} B up, {down} B down")


# --- a client nobody here wrote -------------------------------------------------------------------
def sdk_params(
    keys: Path, target: str, payload: dict[str, Any], key: Ed25519PrivateKey | None = None
) -> dict[str, Any]:
    """``direct.send``'s params made with the SDK alone, as its user would."""
    did, mid = relay_did(keys), str(uuid.uuid4())
    meta = {
        "anp_version": "1.0",
        "profile": "anp.direct.base.v1",
        "security_profile": "transport-protected",
        "sender_did": did,
        "target": {"kind": "agent", "did": target},
        "operation_id": mid,
        "message_id": mid,
        "content_type": "application/json",
    }
    body = {"conversation_id": "r1", "payload": payload}
    options = Rfc9421OriginProofGenerationOptions(created=int(time.time()), nonce=secrets.token_urlsafe(12))
    proof = generate_rfc9421_origin_proof(
        "direct.send", meta, body, key or relay_key(keys), f"{did}#key-1", options=options
    )
    return {
        "meta": meta,
        "auth": {"scheme": "anp-rfc9421-origin-proof-v1", "origin_proof": proof},
        "body": body,
    }


async def test_the_sdks_own_remote_agent_discovers_and_calls_direct_send(keys: Path, agent: str) -> None:
    auth = DIDWbaAuthHeader(str(relay_document_path(keys)), str(keys / "network.pem"))
    remote = await RemoteAgent.discover(agent + "/ad.json", auth)
    assert (remote.name, remote.method_names) == ("extract", ("direct.send",))
    assert remote.get_method("direct.send").rpc_url == agent + "/rpc"
    async with httpx.AsyncClient() as http:  # the agent's DID, from its description, as a user reads it
        target = (await http.get(agent + "/ad.json")).json()["did"]
    result = await remote.call("direct.send", **sdk_params(keys, target, packet("echo")))
    assert result == {"payloads": [json.loads(reply("ECHO", 2))]}


def test_the_legacy_didwba_authorization_header_is_accepted_too(keys: Path, agent: str) -> None:
    auth = DIDWbaAuthHeader(
        str(relay_document_path(keys)), str(keys / "network.pem"), auth_mode="legacy_didwba"
    )
    target = httpx.get(agent + "/ad.json").json()["did"]
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": "1",
            "method": "direct.send",
            "params": sdk_params(keys, target, packet("echo")),
        }
    ).encode()
    header = auth.get_auth_header(agent + "/rpc", method="POST", body=body)
    assert header["Authorization"].startswith("DIDWba ")
    answer = httpx.post(agent + "/rpc", content=body, headers={**header, "Content-Type": "application/json"})
    assert answer.status_code == 200 and answer.json()["result"]["payloads"] == [json.loads(reply("ECHO", 2))]


# --- discovery documents ------------------------------------------------------------------------
def test_the_did_document_and_description_name_the_address_the_caller_used(agent: str) -> None:
    ad = httpx.get(agent + "/ad.json", headers={"Host": "tap.example:9"}).json()
    assert (ad["name"], ad["url"], ad["consumes"]) == (
        "extract",
        "http://tap.example:9/anp/ad.json",
        ["doc_init", "search_docs"],
    )
    assert ad["did"].startswith("did:wba:tap.example%3A9:anp:agents:3:e1_")
    assert ad["interfaces"][0]["content"]["servers"][0]["url"] == "http://tap.example:9/anp/rpc"
    assert ad["interfaces"][0]["content"]["methods"][0]["name"] == "direct.send"
    path = "/agents/3/" + ad["did"].split(":")[-1] + "/did.json"
    doc = httpx.get(agent + path, headers={"Host": "tap.example:9"}).json()
    assert doc["id"] == ad["did"] and validate_did_document_binding(doc), (
        "the SDK's e1 binding check (its proof)"
    )
    assert doc["service"][0] == {
        "id": doc["id"] + "#message",
        "type": "ANPMessageService",
        "profiles": ["anp.direct.base.v1"],
        "serviceEndpoint": "http://tap.example:9/anp/rpc",
        "securityProfiles": ["transport-protected"],
    }
    assert httpx.get(agent + "/agents/3/e1_notmine/did.json").status_code == 404
    assert httpx.get(agent + path, headers={"Host": "bad host/"}).status_code == 400


# --- bad input ----------------------------------------------------------------------------------
def signed_post(
    keys: Path, url: str, body: bytes, pem: Path | None = None, document: Path | None = None
) -> httpx.Response:
    auth = DIDWbaAuthHeader(str(document or relay_document_path(keys)), str(pem or keys / "network.pem"))
    headers = {"Content-Type": "application/json"}
    return httpx.post(
        url,
        content=body,
        headers={**headers, **auth.get_auth_header(url, method="POST", headers=headers, body=body)},
    )


def rpc(params: Any, method: str = "direct.send") -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": "x1", "method": method, "params": params}).encode()


def test_bad_json_rpc_gets_the_json_rpc_error_and_the_server_keeps_serving(keys: Path, agent: str) -> None:
    url, target = agent + "/rpc", httpx.get(agent + "/ad.json").json()["did"]
    good = sdk_params(keys, target, packet("echo"))
    cases: list[tuple[bytes, int, int, str]] = [
        (b'{"jsonrpc": "2.0", "id": 1, "method": ', 400, -32700, ""),
        (b"[1, 2]", 400, -32600, ""),
        (rpc(good, method="direct.recall"), 200, -32601, "does not exist"),
        (rpc({"meta": good["meta"]}), 200, -32602, "missing 2 required"),
        (rpc({**good, "body": {**good["body"], "extra": 1}}), 200, -32602, "anp: body has members"),
        (
            rpc(sdk_params(keys, target, {"run_id": "r1", "hello": "world"})),
            200,
            -32602,
            "packet has no 'type'",
        ),
        (rpc(sdk_params(keys, target, {**packet("echo"), "run_id": "r2"})), 200, -32602, "of the run in"),
        (
            rpc(sdk_params(keys, target, packet("echo"), key=relay_key(keys, "7"))),
            200,
            -32602,
            "bad signature",
        ),
        (
            rpc(sdk_params(keys, target.replace(":3:", ":4:"), packet("echo"))),
            200,
            -32602,
            "names another target",
        ),
    ]
    for body, status, code, data in cases:
        answer = signed_post(keys, url, body)
        assert (answer.status_code, answer.json()["error"]["code"]) == (status, code), body[:80]
        assert data in str(answer.json()["error"].get("data", "")), answer.json()
    assert signed_post(keys, url, rpc(good)).json()["result"]["payloads"] == [json.loads(reply("ECHO", 2))]


def challenge(answer: httpx.Response) -> str:
    return answer.headers.get("www-authenticate", "")


def test_bad_did_wba_authentication_gets_the_sdks_refusal(
    keys: Path, agent: str, did_host: DidHost, tmp_path: Path
) -> None:
    url, target = agent + "/rpc", httpx.get(agent + "/ad.json").json()["did"]
    body = rpc(sdk_params(keys, target, packet("echo")))
    # A wrong DID signature: the relay's DID, signed with another key.
    wrong = signed_post(keys, url, body, pem=keys / "7.pem")
    assert wrong.status_code == 401 and 'error="invalid_signature"' in challenge(wrong)
    # The body changed after it was signed.
    auth = DIDWbaAuthHeader(str(relay_document_path(keys)), str(keys / "network.pem"))
    headers = auth.get_auth_header(url, method="POST", body=body)
    tampered = httpx.post(url, content=body.replace(b"echo", b"ECHO"), headers=headers)
    assert tampered.status_code == 401 and "Content-Digest verification failed" in tampered.json()["detail"]
    # The same signed request again: the SDK's nonce check.
    first, again = (
        httpx.post(url, content=body, headers={**headers, "Content-Type": "application/json"})
        for _ in range(2)
    )
    assert (
        first.status_code == 200 and again.status_code == 401 and 'error="invalid_nonce"' in challenge(again)
    )
    # A DID that is not the relay's: refused before anything is fetched.
    publish_did(keys, f"localhost:{did_host.port}", node="7")
    fetched = len(did_host.fetched)
    stranger = signed_post(keys, url, body, pem=keys / "7.pem", document=relay_document_path(keys, "7"))
    assert stranger.status_code == 403 and 'error="forbidden_did"' in challenge(stranger)
    assert stranger.json()["detail"].startswith("forbidden_did: ")
    assert len(did_host.fetched) == fetched
    stranger_auth = DIDWbaAuthHeader(str(relay_document_path(keys, "7")), str(keys / "7.pem"))
    description = httpx.get(agent + "/ad.json", headers=stranger_auth.get_auth_header(agent + "/ad.json"))
    assert description.status_code == 200, "the agent description stays public, whoever signs for it"
    # The relay's DID at a host where nothing answers: unresolvable.
    for name in ("network.pem", "public.json"):
        shutil.copy(keys / name, tmp_path / name)
    publish_did(tmp_path, f"localhost:{free_port()}")
    lost = signed_post(keys, url, body, document=relay_document_path(tmp_path))
    assert lost.status_code == 401 and lost.json()["detail"] == "Failed to resolve DID document"
    # No authentication at all, and a Bearer token the agent never issued.
    assert httpx.post(url, content=body).status_code == 401
    assert httpx.post(url, content=body, headers={"Authorization": "Bearer not.a.token"}).status_code == 401
    assert signed_post(keys, url, rpc(sdk_params(keys, target, packet("echo")))).status_code == 200


async def test_the_sdks_client_reads_why_another_did_is_refused(keys: Path, agent: str, did_host: DidHost) -> None:
    """A DID that is not the relay's, with the SDK's ANPClient as its user would call
    ``direct.send``: the 403's body says why (its ``fetch_url`` gives the body as ``text``;
    ``call_jsonrpc`` keeps only the status, the SDK's choice)."""
    publish_did(keys, f"localhost:{did_host.port}", node="7")
    client = ANPClient(str(relay_document_path(keys, "7")), str(keys / "7.pem"))
    async with httpx.AsyncClient() as http:
        target = (await http.get(agent + "/ad.json")).json()["did"]
    request = json.loads(rpc(sdk_params(keys, target, packet("echo"))))
    got = await client.fetch_url(agent + "/rpc", method="POST", body=request)
    assert (got["success"], got["status_code"], got["error"]) == (False, 403, "HTTP 403: Forbidden")
    detail = json.loads(got["text"])["detail"]
    assert detail.startswith("forbidden_did: this agent answers only the relay of the runs it was started for")
    assert ":agents:network:e1_" in detail and "did:wba:localhost" in detail
    called = await client.call_jsonrpc(agent + "/rpc", "direct.send", request["params"])
    assert called["error"]["message"] == "HTTP 403: Forbidden"


async def test_our_client_recovers_from_a_token_the_agent_refuses(keys: Path, agent: str) -> None:
    async with httpx.AsyncClient(timeout=10) as http:
        client = binding("anp").client(Peer(agent, "3", "r1", keys), http)
        assert isinstance(client, AnpClient)
        await send_all(client, canonical_json(packet("echo")))
        client.auth.tokens["127.0.0.1"] = "expired.or.forged"
        assert await send_all(client, canonical_json(packet("echo"))) == [
            reply("ECHO", 2)
        ]  # the SDK's 401 retry
        assert client.auth.tokens["127.0.0.1"] != "expired.or.forged"


def test_a_frame_built_by_the_relay_mode_builder_is_what_the_agent_takes(keys: Path, agent: str) -> None:
    target = httpx.get(agent + "/ad.json").json()["did"]
    frame = direct_send(packet("echo"), relay_key(keys), relay_did(keys), {"kind": "agent", "did": target})
    answer = signed_post(keys, agent + "/rpc", json.dumps(frame).encode())
    assert answer.json() == {
        "jsonrpc": "2.0",
        "id": frame["id"],
        "result": {"payloads": [json.loads(reply("ECHO", 2))]},
    }
