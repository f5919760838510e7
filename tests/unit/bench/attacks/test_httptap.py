"""The attacker on a protocol's own wire (bench/attacks/httptap.py, bench/attacks/native.py): HTTP/1.1
messages framed out of bytes as they come, one acted on, and the judge of a copied request, by
plain calls on messages shaped as the protocols' SDKs send them."""

from __future__ import annotations

import json

from gaiamesh.bench.attacks.httptap import HttpSplice, HttpTamper, Message, flip_said, halve, strip_to_packet
from gaiamesh.bench.attacks.native import judge_copy
from gaiamesh.bench.attacks.wiretap import Seen, Way
from gaiamesh.mesh.frames import PacketType, make_packet

PACKET = make_packet(PacketType.EVENTS, {"facts": [{"text": "The farm's output is 148 megawatts.", "score": 1.0}]},
                     run_id="r1",
                     src="1", seq=1).to_dict()  # fmt: skip
ANSWER = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"parts": [{"data": PACKET}]}}).encode()


def _request(body: bytes, method: str = "POST", path: str = "/a2a/") -> bytes:
    return f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:4242\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body


def _response(body: bytes, chunked: bool = False, kind: str = "application/json") -> bytes:
    if chunked:
        return (f"HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\nTransfer-Encoding: chunked\r\n\r\n"
                f"{len(body):x}\r\n").encode() + body + b"\r\n0\r\n\r\n"  # fmt: skip
    return f"HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\ncontent-length: {len(body)}\r\n\r\n".encode() + body


def _passes(s: HttpSplice, way: Way, data: bytes, step: int = 7) -> bytes:
    """What the splice writes for ``data`` fed a few bytes at a time."""
    return b"".join(x.data for i in range(0, len(data), step) for x in s.feed(way, data[i : i + step]))


def test_a_clean_exchange_passes_byte_for_byte_and_the_tap_reads_its_bodies() -> None:
    seen = Seen()
    s = HttpSplice(None, seen)
    asked, answered = _request(json.dumps({"params": PACKET}).encode()), _response(ANSWER, chunked=True)
    assert _passes(s, Way.DOWN, asked) == asked
    assert _passes(s, Way.UP, answered) == answered  # chunked: one chunk, joined for the tap
    assert [body for _, body in seen.frames] == [json.dumps({"params": PACKET}).encode(), ANSWER]


def test_an_event_stream_a_get_opened_passes_as_it_comes() -> None:
    s = HttpSplice(None, Seen())
    s.feed(Way.DOWN, b"GET /mcp/ HTTP/1.1\r\nHost: x\r\n\r\n")
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    assert b"".join(x.data for x in s.feed(Way.UP, head)) == head  # no end needed: it may never come
    event = b"1a\r\nevent: ping\r\ndata: {}\r\n\r\n\r\n"
    assert b"".join(x.data for x in s.feed(Way.UP, event)) == event


def test_the_flip_acts_on_the_first_answer_that_carries_a_packet_and_keeps_it_framed() -> None:
    tamper = HttpTamper("alter", alter=flip_said)
    s = HttpSplice(tamper, Seen())
    status = json.dumps({"result": {"task": {"state": "TASK_STATE_COMPLETED", "id": "0123456789abcdef"}}}).encode()
    for body in (status, ANSWER):
        s.feed(Way.DOWN, _request(json.dumps({"params": PACKET}).encode()))
        sent = _passes(s, Way.UP, _response(body))
        if body is status:
            assert sent == _response(status) and not tamper.fired  # no packet: a task's status passes
    assert tamper.fired and tamper.original == ANSWER and tamper.sent is not None
    assert sum(a != b for a, b in zip(tamper.sent, ANSWER, strict=True)) == 1 and b"megawatts" in ANSWER
    message = Message(sent.split(b"\r\n\r\n")[0] + b"\r\n\r\n")
    assert message.header("content-length") == str(len(tamper.sent)) and sent.endswith(tamper.sent)


def test_a_cut_or_stripped_answer_is_framed_anew() -> None:
    chunked = Message(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", b"", chunked=True)
    assert chunked.with_body(b"abc").endswith(b"3\r\nabc\r\n0\r\n\r\n")
    sized = Message(b"HTTP/1.1 200 OK\r\ncontent-length: 99\r\nx: y\r\n\r\n")
    assert sized.with_body(b"abcd") == b"HTTP/1.1 200 OK\r\nx: y\r\ncontent-length: 4\r\n\r\nabcd"
    assert halve(b"abcdef") == b"abc"
    bare = strip_to_packet(ANSWER)
    assert bare is not None and json.loads(bare) == PACKET and strip_to_packet(b"no packet here") is None


def test_a_copy_goes_once_the_original_is_answered_and_a_directory_is_repointed() -> None:
    copies: list[bytes] = []
    tamper = HttpTamper("copy", way=Way.DOWN, on_copy=copies.append)
    s = HttpSplice(tamper, Seen())
    asked = _request(json.dumps({"params": PACKET}).encode())
    assert _passes(s, Way.DOWN, asked) == asked and copies == []  # the original first
    _passes(s, Way.UP, _response(ANSWER))
    assert copies == [asked]
    poison = HttpTamper("repoint", to=b"127.0.0.1:6666")
    s = HttpSplice(poison, Seen())
    s.feed(Way.DOWN, _request(b"", method="GET", path="/a2a/.well-known/agent-card.json"))
    card = json.dumps({"supportedInterfaces": [{"url": "http://127.0.0.1:4242/a2a/"}]}).encode()
    sent = _passes(s, Way.UP, _response(card))
    assert b"http://127.0.0.1:6666/a2a/" in sent and b"4242" not in sent.split(b"\r\n\r\n", 1)[1]


def test_a_copied_request_answered_with_an_error_was_refused() -> None:
    ok = _response(json.dumps({"result": {"x": 1}}).encode())
    assert judge_copy(ok)[0] == "succeeded"
    rpc_error = _response(json.dumps({"jsonrpc": "2.0", "error": {"code": -32001, "message": "replayed"}}).encode())
    outcome, evidence = judge_copy(rpc_error)
    assert outcome == "blocked" and "replayed" in evidence  # JSON-RPC's errors come with 200
    outcome, evidence = judge_copy(b'HTTP/1.1 401 Unauthorized\r\ncontent-length: 30\r\n\r\n{"detail":"Invalid nonce"}')
    assert outcome == "blocked" and "401" in evidence and "Invalid nonce" in evidence
    assert judge_copy(b"")[0] == "blocked"
