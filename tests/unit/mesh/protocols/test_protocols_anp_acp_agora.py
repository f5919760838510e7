"""ANP, ACP and Agora: every frame read back with the protocol's own SDK, and bad frames refused."""

from __future__ import annotations

import base64
import copy
import json
import time
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
from acp_sdk.models import Message as SdkMessage
from acp_sdk.models import MessagePart as SdkMessagePart
from acp_sdk.models import RunCreateRequest as SdkRunCreateRequest
from agora import Protocol as AgoraProtocol
from agora.utils import compute_hash, download_and_verify_protocol
from anp.authentication.did_wba import validate_did_document_binding
from anp.authentication.verification_methods import create_verification_method
from anp.proof import (
    Rfc9421OriginProofVerificationOptions,
    generate_w3c_proof,
    parse_im_signature_input,
    verify_rfc9421_origin_proof,
)
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from gaiamesh.mesh.frames import PacketType, parse_packet
from gaiamesh.mesh.protocols import ProtocolError, canonical_json, generate_keys, get_adapter
from gaiamesh.mesh.protocols.acp.envelope import session_of
from gaiamesh.mesh.protocols.agora.envelope import DOCUMENT, PROTOCOL_HASH
from gaiamesh.mesh.protocols.anp.envelope import MESH_DID, AnpAdapter, did_document

NODES = ["network", "0", "1", "2", "3"]


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate_keys(tmp_path_factory.mktemp("keys"), NODES)


def packet(**kw: object) -> dict[str, Any]:
    base = {"type": "events", "run_id": "r1", "src": "1", "seq": 1, "tag": None, "question": "q?",
            "payload": {"facts": [{"text": "héllo \"✓\"", "score": 1.5}]}, "token_used": 12}  # fmt: skip
    return {**base, **kw}


def every_type() -> list[dict[str, Any]]:
    """One packet of each type, from the relay (doc_init) or an agent."""
    return [packet(type=t.value, src="network" if t is PacketType.DOC_INIT else "2") for t in PacketType]


def public_document(keys: Path, node: str) -> dict[str, Any]:
    raw = bytes.fromhex(json.loads((keys / "public.json").read_text())[node])
    return did_document(node, Ed25519PublicKey.from_public_bytes(raw))


def private_key(keys: Path, node: str) -> Ed25519PrivateKey:
    key = serialization.load_pem_private_key((keys / f"{node}.pem").read_bytes(), password=None)
    assert isinstance(key, Ed25519PrivateKey)
    return key


def check_with_anp_sdk(blob: bytes, document: dict[str, Any]) -> dict[str, Any]:
    """Read an ``anp`` frame as an ANP receiver would, with the SDK only (not the adapter)."""
    frame = json.loads(blob)
    assert frame["jsonrpc"] == "2.0" and frame["method"] == "direct.send" and frame["id"]
    params = frame["params"]
    meta, auth, body = params["meta"], params["auth"], params["body"]
    assert meta["profile"] == "anp.direct.base.v1" and meta["security_profile"] == "transport-protected"
    assert meta["content_type"] == "application/json" and meta["sender_did"] == document["id"]
    assert auth["scheme"] == "anp-rfc9421-origin-proof-v1"
    parsed = parse_im_signature_input(auth["origin_proof"]["signatureInput"])
    assert parsed.keyid == f"{document['id']}#key-1"
    assert parsed.components == ("@method", "@target-uri", "content-digest")
    verify_rfc9421_origin_proof(
        auth["origin_proof"], frame["method"], meta, body, did_document=document,
        options=Rfc9421OriginProofVerificationOptions(expected_signer_did=document["id"]),
    )  # fmt: skip
    assert body["conversation_id"] == body["payload"]["run_id"]
    return body["payload"]


# --- ANP ---------------------------------------------------------------------------------------
def test_anp_dids_are_e1_did_wba_bound_to_the_keygen_keys(keys: Path) -> None:
    for node in NODES:
        doc = public_document(keys, node)
        assert doc["id"].startswith(f"did:wba:gaiamesh.local:agents:{node}:e1_")
        # the SDK reads the node's own public key back out of the document
        method = create_verification_method(doc["verificationMethod"][0])
        pub = private_key(keys, node).public_key()
        assert method.public_key.public_bytes_raw() == pub.public_bytes_raw()
        # signed by its key as ANP's e1 profile signs DID documents, it passes the SDK's binding check
        signed = generate_w3c_proof(
            document=doc, private_key=private_key(keys, node), verification_method=doc["verificationMethod"][0]["id"],
            proof_purpose="assertionMethod", proof_type="DataIntegrityProof", cryptosuite="eddsa-jcs-2022",
        )  # fmt: skip
        assert validate_did_document_binding(signed, verify_proof=True)
        other = public_document(keys, "0" if node != "0" else "1")
        assert not validate_did_document_binding({**signed, "id": other["id"]}, verify_proof=True)


def test_anp_frames_verify_with_the_sdk_and_round_trip(keys: Path) -> None:
    relay, agent2 = get_adapter("anp", "network", keys), get_adapter("anp", "2", keys)
    for p in every_type():
        sender, receiver = (relay, agent2) if p["src"] == "network" else (agent2, relay)
        blob = sender.encode(p)
        assert check_with_anp_sdk(blob, public_document(keys, p["src"])) == p
        assert receiver.decode(blob) == p
        target = json.loads(blob)["params"]["meta"]["target"]
        expected = MESH_DID if p["src"] == "network" else public_document(keys, "network")["id"]
        assert target == {"kind": "group" if p["src"] == "network" else "agent", "did": expected}


def _resign(blob: bytes, edit: Any) -> bytes:
    frame = json.loads(blob)
    edit(frame)
    return json.dumps(frame).encode()


def test_anp_rejects_tampered_forged_spoofed_and_unknown_frames(keys: Path) -> None:
    agent, relay = get_adapter("anp", "1", keys), get_adapter("anp", "network", keys)
    blob = agent.encode(packet())

    def flip_signature(f: dict) -> None:
        proof = f["params"]["auth"]["origin_proof"]
        raw = bytearray(base64.b64decode(proof["signature"].split(":")[1]))
        raw[0] ^= 1
        proof["signature"] = f"sig1=:{base64.b64encode(bytes(raw)).decode()}:"

    def tamper(f: dict) -> None:
        f["params"]["body"]["payload"]["question"] = "other?"

    def tamper_and_redigest(f: dict) -> None:  # a forger who recomputes the digest still lacks the key
        from anp.proof import build_im_content_digest
        from anp.proof.rfc9421_origin import build_signed_request_object, canonicalize_signed_request_object

        tamper(f)
        obj = build_signed_request_object("direct.send", f["params"]["meta"], f["params"]["body"])
        f["params"]["auth"]["origin_proof"]["contentDigest"] = build_im_content_digest(canonicalize_signed_request_object(obj))

    cases = [
        (_resign(blob, tamper), "invalid origin proof .*contentDigest does not match"),
        (_resign(blob, tamper_and_redigest), "bad signature on a frame from 'did:wba:gaiamesh.local:agents:1:"),
        (_resign(blob, flip_signature), "bad signature on a frame from"),
        (_resign(blob, lambda f: f["params"].update(extra=1)), r"params has members \['auth', 'body', 'extra', 'meta'\]"),
        (_resign(blob, lambda f: f["params"]["meta"].update(bogus=1)), "meta has members"),
        (_resign(blob, lambda f: f["params"]["auth"].update(scheme="did-wba")), "unsupported auth scheme 'did-wba'"),
        (_resign(blob, lambda f: f.update(method="group.send")), "not a JSON-RPC 2.0 direct.send request"),
        (_resign(blob, lambda f: f["params"]["meta"]["target"].update(did=MESH_DID)), "names the wrong target"),
        (_resign(blob, lambda f: f["params"]["meta"].update(sender_did="did:wba:evil.example:e1_x")),
         "unknown sender DID 'did:wba:evil.example:e1_x'"),
        (agent.encode(packet(src="2")), "packet src/run '2' does not match its signer '1'"),
        (get_adapter("json").encode(packet()), "request has members"),
    ]  # fmt: skip
    for bad, message in cases:
        with pytest.raises(ProtocolError, match=message):
            relay.decode(bad)
    stranger_keys = generate_keys(keys.parent / "stranger", ["network", "1"])
    stranger = get_adapter("anp", "1", stranger_keys)  # same node id, another key: another DID
    with pytest.raises(ProtocolError, match="unknown sender DID 'did:wba:gaiamesh.local:agents:1:e1_"):
        relay.decode(stranger.encode(packet()))


def test_anp_takes_a_frame_once_and_only_while_its_proof_is_fresh(keys: Path) -> None:
    """The SDK signs created and nonce and checks neither; the adapter checks both."""
    from anp.proof import Rfc9421OriginProofGenerationOptions, generate_rfc9421_origin_proof

    agent, relay = get_adapter("anp", "1", keys), get_adapter("anp", "network", keys, replay_window_s=30)
    blob = agent.encode(packet())
    relay.decode(blob)
    with pytest.raises(ProtocolError, match="anp: replayed"):
        relay.decode(blob)
    assert relay.per_connection().decode(blob)["src"] == "1"

    def made_long_ago(f: dict) -> None:  # a valid proof, signed by the sender, 60 s old
        p = f["params"]
        options = Rfc9421OriginProofGenerationOptions(created=int(time.time()) - 60, nonce="n-old")
        p["auth"]["origin_proof"] = generate_rfc9421_origin_proof(
            "direct.send", p["meta"], p["body"], agent._key, p["meta"]["sender_did"] + "#key-1", options=options
        )

    with pytest.raises(ProtocolError, match="anp: stale"):
        relay.decode(_resign(blob, made_long_ago))


def test_anp_without_keys_is_a_clear_error(tmp_path: Path, keys: Path) -> None:
    with pytest.raises(ProtocolError, match="anp: cannot load keys for node '1'"):
        get_adapter("anp", "1", tmp_path)
    with pytest.raises(ProtocolError, match="anp: node '9' is not in public.json"):
        AnpAdapter("9", Ed25519PrivateKey.generate(), {"network": private_key(keys, "network").public_key()})


# --- ACP ---------------------------------------------------------------------------------------
def test_acp_frames_are_valid_sdk_run_create_requests(keys: Path) -> None:
    a = get_adapter("acp")
    for p in every_type():
        blob = a.encode(p)
        request = SdkRunCreateRequest.model_validate_json(blob)
        assert request.agent_name == p["type"] and request.mode.value == "async"
        assert request.session_id == session_of("r1") and request.session is None
        (message,) = request.input
        assert message.role == ("user" if p["src"] == "network" else "agent/2")
        assert message.created_at is not None and message.completed_at is not None
        (part,) = message.parts
        assert part.content_type == "application/json" and part.content_encoding == "plain"
        assert json.loads(part.content or "") == p
        assert a.decode(blob) == p
        assert a.header_size(p) == len(blob) - len(canonical_json(p))


def test_acp_reads_a_request_the_sdk_made() -> None:
    p = packet()
    sdk_made = SdkRunCreateRequest(
        agent_name="events", session_id=session_of("r1"), mode="async",
        input=[SdkMessage(role="agent/1", parts=[SdkMessagePart(content=canonical_json(p).decode(),
                                                                content_type="application/json")])],
    ).model_dump_json()  # fmt: skip
    assert '"content_url":null' in sdk_made  # the SDK writes every optional member
    assert get_adapter("acp").decode(sdk_made.encode()) == p


def test_acp_rejects_invalid_requests() -> None:
    a = get_adapter("acp")
    good = json.loads(a.encode(packet()))
    part = good["input"][0]["parts"][0]

    def with_part(**kw: Any) -> dict:
        bad = copy.deepcopy(good)
        bad["input"][0]["parts"][0] = {**part, **kw}
        return bad

    cases = [
        ({**good, "bogus": 1}, r"not a valid RunCreateRequest \(bogus: Extra inputs are not permitted\)"),
        (with_part(bogus=1), r"input.0.parts.0.bogus: Extra inputs"),
        (with_part(content_url="https://example.com/p.json"), "input.0.parts.0.content_url"),
        (with_part(content_type="text/plain"), "must carry application/json content inline"),
        ({**good, "input": good["input"] * 2}, "expected one input message with one part"),
        ({**good, "agent_name": "triples"}, "agent_name 'triples' is not the packet's topic"),
        ({**good, "session_id": str(session_of("r2"))}, "session_id is not the packet's run"),
        ({**good, "mode": "batch"}, r"mode: Input should be 'sync', 'async' or 'stream'"),
        ({**good, "input": [{**good["input"][0], "role": "agent/2"}]}, "role 'agent/2' does not match"),
        ({**good, "input": [{**good["input"][0], "role": "robot"}]}, "input.0.role: String should match"),
    ]
    for request, message in cases:
        with pytest.raises(ProtocolError, match=message):
            a.decode(json.dumps(request).encode())


# --- Agora -------------------------------------------------------------------------------------
def test_agora_frames_carry_the_sdk_hash_of_the_protocol_document() -> None:
    a = get_adapter("agora")
    protocol = AgoraProtocol(DOCUMENT, [], None)  # the SDK parses the document's front matter
    assert protocol.metadata == {"name": "gaiamesh-packet-v1", "multiround": False,
                                 "description": "One Gaia Mesh packet per message, sent by an agent or the relay of a run."}  # fmt: skip
    assert protocol.hash == compute_hash(DOCUMENT) == PROTOCOL_HASH
    for p in every_type():
        blob = a.encode(p)
        message = json.loads(blob)
        assert set(message) == {"protocolHash", "protocolSources", "body"}
        assert message["protocolHash"] == protocol.hash
        (source,) = message["protocolSources"]
        assert download_and_verify_protocol(message["protocolHash"], source) == DOCUMENT  # a data: URI, no network
        assert json.loads(message["body"]) == p
        assert a.decode(blob) == p
        assert a.header_size(p) == len(blob) - len(canonical_json(p))


def test_agora_rejects_wrong_hashes_sources_and_members() -> None:
    a = get_adapter("agora")
    good = json.loads(a.encode(packet()))
    other = DOCUMENT.replace("version 1", "version 2")
    forged = "data:text/plain;charset=utf-8," + urllib.parse.quote(other)
    b64 = "data:text/plain;charset=utf-8;base64," + base64.b64encode(DOCUMENT.encode()).decode()
    cases = [
        ({**good, "protocolHash": compute_hash(other)}, "unknown protocol hash"),
        ({**good, "protocolSources": [forged]}, "a protocol source does not match protocolHash"),
        ({**good, "protocolSources": ["data:text/html,<p>"]}, "unsupported data: protocol source"),
        ({**good, "protocolSources": "https://example.com"}, "protocolSources must be a list of strings"),
        ({**good, "bogus": 1}, r"unexpected members \['bogus'\]"),
        ({k: v for k, v in good.items() if k != "body"}, r"missing members \['body'\]"),
        ({**good, "multiround": True}, "multiround conversations are not part of this protocol"),
        ({**good, "body": json.loads(good["body"])}, "body must be a string"),
    ]
    for message, error in cases:
        with pytest.raises(ProtocolError, match=error):
            a.decode(json.dumps(message).encode())
    # other sources are fine: a base64 data: URI that holds the document, a URL (not fetched)
    ok = {**good, "protocolSources": [b64, "https://example.com/gaiamesh-packet.md"]}
    assert a.decode(json.dumps(ok).encode()) == packet()


# --- all three ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["anp", "acp", "agora"])
def test_header_bytes_are_the_frame_minus_the_packet(keys: Path, name: str) -> None:
    a = get_adapter(name, "2", keys)
    for p in every_type():
        if p["src"] != "2":
            continue
        typed = parse_packet({**p, "payload": _payload(p["type"])})
        blob = a.encode(typed.to_dict())
        assert a.header_bytes(blob, typed) == len(blob) - len(canonical_json(typed.to_dict())) > 100
        assert a.header_bytes(blob, typed) == a.header_size(typed.to_dict())


def _payload(ptype: str) -> dict[str, Any]:
    return {
        "search_docs": {"passages": [{"chunk": 0, "score": 1.0, "text": "t"}], "n_chunks": 1},
        "events": {"facts": [{"text": "héllo", "score": 1.5}]},
        "triples": {"triples": [], "facts": []},
        "data_event": {"answer": "a", "method": "m", "question": "q", "reading": "r", "candidates": [],
                       "facts_used": 0, "triples_seen": 0},
        "error": {"tool": "t", "error": "e", "on": "o"},
        "subtask": {"sub_task_id": "s", "parent_task_id": "p", "assigned_agent_role": "r", "tool_name": "t",
                    "sub_task_input": {}},
        "result": {"sub_task_id": "s", "parent_task_id": "p", "worker_agent_role": "r", "status": "COMPLETED"},
    }[ptype]  # fmt: skip
