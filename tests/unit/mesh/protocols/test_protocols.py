"""Every adapter: round trips, truthful header sizes, precise errors, and property tests."""

from __future__ import annotations

import json
import time
import zlib
from pathlib import Path

import pytest
from a2a import types as a2a_types
from google.protobuf import json_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gaiamesh.mesh.frames import PacketType
from gaiamesh.mesh.protocols import (
    ProtocolAdapter,
    ProtocolError,
    available,
    canonical_json,
    generate_keys,
    get_adapter,
    signed,
)
from gaiamesh.mesh.protocols.signed import SignedAdapter

NODES = ["network", "0", "1", "2", "3"]


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate_keys(tmp_path_factory.mktemp("keys"), NODES)


def adapters(keys: Path, node: str = "1") -> dict[str, ProtocolAdapter]:
    return {name: get_adapter(name, node, keys) for name in available()}


def packet(**kw: object) -> dict:
    base = {"type": "events", "run_id": "r1", "src": "1", "seq": 1, "tag": None, "question": "q?",
            "payload": {"facts": [{"text": "héllo ✓", "score": 1.5}]}, "token_used": 12}  # fmt: skip
    return {**base, **kw}


def test_registry_lists_the_nine_protocols() -> None:
    assert available() == ["a2a", "acp", "agora", "anp", "binary", "compressed", "json", "mcp", "signed"]
    with pytest.raises(ValueError, match="unknown protocol 'carrier-pigeon'"):
        get_adapter("carrier-pigeon")


@pytest.mark.parametrize("name", ["json", "binary", "compressed", "signed", "a2a", "anp", "acp", "agora", "mcp"])
def test_round_trip_and_truthful_header_size(keys: Path, name: str) -> None:
    a = adapters(keys)[name]
    p = packet()
    blob = a.encode(p)
    assert a.decode(blob) == p
    body = {
        "json": canonical_json(p),
        "binary": blob[13:],
        "compressed": blob[8:],
        "signed": canonical_json(p),
        "a2a": canonical_json(p),
        "anp": canonical_json(p),  # the packet rides as a JSON object; all else is ANP's
        "acp": canonical_json(p),
        "agora": canonical_json(p),
        "mcp": canonical_json(p),  # the packet rides as a JSON object in the arguments
    }[name]
    assert a.header_size(p) == len(blob) - len(body)
    assert (a.header_size(p) == 0) == (name == "json")


def test_binary_rejects_bad_frames_precisely(keys: Path) -> None:
    a = get_adapter("binary")
    blob = a.encode(packet())
    cases = {
        blob[:5]: "truncated frame (5 bytes",
        b"XX" + blob[2:]: "bad magic b'XX'",
        blob[:2] + b"\x09" + blob[3:]: "unknown version 9",
        blob[:3] + b"\x63" + blob[4:]: "unknown packet type code 99",
        blob[:4] + bytes([blob[4] | 0x02]) + blob[5:]: "unknown flag bits 0x02",
        blob[:-1]: "truncated frame (header says",
        blob[:-1] + bytes([blob[-1] ^ 1]): "CRC mismatch",
    }
    for bad, message in cases.items():
        with pytest.raises(ProtocolError, match=message.replace("(", r"\(")):
            a.decode(bad)


def test_compressed_checks_the_length_and_stream(keys: Path) -> None:
    a = get_adapter("compressed")
    blob = a.encode(packet())
    with pytest.raises(ProtocolError, match="length mismatch"):
        a.decode(blob[:4] + (10**6).to_bytes(4, "big") + blob[8:])
    with pytest.raises(ProtocolError, match="corrupt zlib stream"):
        a.decode(blob[:8] + b"garbage")
    bomb = b"GZ\x01\x01" + (10).to_bytes(4, "big") + zlib.compress(b"{" * 100000)
    with pytest.raises(ProtocolError, match="length mismatch"):
        a.decode(bomb)  # inflation stops at the declared length


def test_signed_rejects_tampered_unsigned_and_spoofed_frames(keys: Path) -> None:
    agent = get_adapter("signed", "1", keys)
    relay = get_adapter("signed", "network", keys)
    blob = agent.encode(packet())
    assert relay.decode(blob)["src"] == "1"
    tampered = blob.replace(b"h\xc3\xa9llo", b"jello")
    with pytest.raises(ProtocolError, match="bad signature on a frame from '1'"):
        relay.decode(tampered)
    with pytest.raises(ProtocolError, match="unsigned frame or bad magic"):
        relay.decode(get_adapter("json").encode(packet()))
    with pytest.raises(ProtocolError, match="packet src '2' is not its signer '1'"):
        relay.decode(agent.encode(packet(src="2")))
    stranger = SignedAdapter("9", *_fresh_key())
    with pytest.raises(ProtocolError, match="unknown signer '9'"):
        relay.decode(stranger.encode(packet(src="9")))


def test_signed_takes_a_frame_once_and_only_while_fresh(keys: Path) -> None:
    agent = get_adapter("signed", "1", keys)
    relay = get_adapter("signed", "network", keys, replay_window_s=30)
    blob = agent.encode(packet())
    relay.decode(blob)
    with pytest.raises(ProtocolError, match="replayed"):
        relay.decode(blob)
    # per connection: the same bytes sent again on a new connection are taken there, once
    fresh = relay.per_connection()
    assert fresh.decode(blob)["src"] == "1"
    with pytest.raises(ProtocolError, match="replayed"):
        fresh.decode(blob)
    # made 60 s ago: outside a 30 s window (made here by hand, signed with the agent's key)
    key = agent._key  # type: ignore[attr-defined]
    head = signed.PREFIX.pack(signed.MAGIC, signed.VERSION, 1) + b"1"
    head += signed.STAMP.pack(int((time.time() - 60) * 1000), b"12345678")
    payload = canonical_json(packet())
    with pytest.raises(ProtocolError, match="stale"):
        relay.decode(head + key.sign(head + payload) + payload)
    assert get_adapter("signed", "network", keys, replay_window_s=0).fresh is None  # 0: not checked


def test_signed_refuses_version_1_so_a_frame_cannot_be_downgraded(keys: Path) -> None:
    agent = get_adapter("signed", "1", keys)
    relay = get_adapter("signed", "network", keys)
    key = agent._key  # type: ignore[attr-defined]
    payload = canonical_json(packet())
    v1 = signed.PREFIX.pack(signed.MAGIC, 1, 1) + b"1" + key.sign(b"1" + payload) + payload
    with pytest.raises(ProtocolError, match="version 1 refused"):
        relay.decode(v1)
    blob = agent.encode(packet())
    assert len(blob) - len(payload) == agent.header_size(packet()) == 4 + 1 + 16 + 64


def _fresh_key() -> tuple:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    return Ed25519PrivateKey.generate(), {}


def test_signed_without_keys_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ProtocolError, match="cannot load keys for node '1'"):
        get_adapter("signed", "1", tmp_path)


def test_a2a_frames_are_valid_sendmessage_requests(keys: Path) -> None:
    a = get_adapter("a2a")
    for ptype in PacketType:
        src = "network" if ptype is PacketType.DOC_INIT else "2"
        envelope = json.loads(a.encode(packet(type=ptype.value, src=src)))
        assert envelope["jsonrpc"] == "2.0" and envelope["method"] == "SendMessage" and envelope["id"]
        request = json_format.ParseDict(
            envelope["params"], a2a_types.SendMessageRequest(), ignore_unknown_fields=False
        )
        msg = request.message
        assert msg.message_id and msg.context_id == "r1"
        assert msg.role == (a2a_types.Role.ROLE_USER if src == "network" else a2a_types.Role.ROLE_AGENT)
        assert json.loads(msg.parts[0].text)["type"] == ptype.value
        assert msg.parts[0].media_type == "application/json"


def test_a2a_rejects_invalid_envelopes(keys: Path) -> None:
    a = get_adapter("a2a")
    good = json.loads(a.encode(packet()))
    cases = [
        ({**good, "jsonrpc": "1.0"}, "not a JSON-RPC 2.0 request"),
        ({**good, "method": "message/send"}, "unsupported method 'message/send'"),
        ({**good, "params": {**good["params"], "bogus": 1}}, "not a valid SendMessageRequest"),
        ({**good, "extra": 1}, "unexpected JSON-RPC members"),
        ({k: v for k, v in good.items() if k != "id"}, "request id missing"),
    ]
    for envelope, message in cases:
        with pytest.raises(ProtocolError, match=message):
            a.decode(json.dumps(envelope).encode())


# --- property tests ---------------------------------------------------------------------------
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=30)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)  # fmt: skip
packets = st.builds(
    lambda t, run, seq, tag, q, payload, tok: packet(
        type=t, run_id=run, seq=seq, tag=tag, question=q, payload=payload, token_used=tok
    ),  # fmt: skip
    st.sampled_from([t.value for t in PacketType]),
    st.text(min_size=1, max_size=16),
    st.integers(0, 2**31),
    st.none() | st.sampled_from(["final_answer", "x"]),
    st.text(max_size=50),
    st.dictionaries(st.text(max_size=8), json_values, max_size=4),
    st.integers(0, 10**6),
)
SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.mark.parametrize("name", ["json", "binary", "compressed", "signed", "a2a", "anp", "acp", "agora", "mcp"])
@SETTINGS
@given(p=packets)
def test_property_round_trip(keys: Path, name: str, p: dict) -> None:
    a = adapters(keys)[name]
    blob = a.encode(p)
    assert a.decode(blob) == p
    assert 0 <= a.header_size(p) <= len(blob)


@pytest.mark.parametrize("name", ["json", "binary", "compressed", "signed", "a2a", "anp", "acp", "agora", "mcp"])
@SETTINGS
@given(data=st.binary(max_size=300))
def test_property_random_bytes_never_crash(keys: Path, name: str, data: bytes) -> None:
    a = adapters(keys)[name]
    try:
        result = a.decode(data)
    except ProtocolError:
        return
    assert isinstance(result, dict)


@pytest.mark.parametrize("name", ["binary", "compressed", "signed", "a2a", "anp", "acp", "agora", "mcp"])
@SETTINGS
@given(p=packets, pos=st.integers(0, 10**6), flip=st.integers(1, 255), cut=st.booleans())
def test_property_mutated_frames_end_in_protocol_errors(
    keys: Path, name: str, p: dict, pos: int, flip: int, cut: bool
) -> None:
    a = adapters(keys)[name]
    blob = bytearray(a.encode(p))
    i = pos % len(blob)
    mutated = bytes(blob[:i]) if cut else bytes(blob[:i]) + bytes([blob[i] ^ flip]) + bytes(blob[i + 1 :])
    try:
        result = a.decode(mutated)
    except ProtocolError:
        return
    # A few mutations are harmless (e.g. an a2a or anp id digit, an acp timestamp digit, a
    # digit of an agora body, which has no checksum); never a crash.
    assert isinstance(result, dict)
    if name in ("binary", "signed"):
        pytest.fail(f"{name}: a mutated frame was accepted")
