import json

import jsonschema
import pytest

from gaiamesh.mesh.frames import (
    EventsPacket,
    FrameError,
    PacketType,
    chunk_document,
    doc_init,
    make_packet,
    packet_schema,
    parse_packet,
    parse_packet_json,
)
from gaiamesh.mesh.payloads import SearchDocs

EV = {"payload": {"facts": []}}


def test_chunking_is_lossless_and_fixed_size() -> None:
    doc = "x" * 401 + "y" * 399
    chunks = chunk_document(doc, 400)
    assert [len(c) for c in chunks] == [400, 400]
    assert "".join(chunks) == doc
    assert chunk_document("", 400) == []
    with pytest.raises(ValueError):
        chunk_document("abc", 0)


def test_doc_init_carries_chunks_and_question() -> None:
    p = doc_init("run1", "a" * 1000, "What?", 400)
    assert p.type is PacketType.DOC_INIT and p.src == "network" and p.question == "What?"
    assert [len(c) for c in p.payload.chunks] == [400, 400, 200]


def test_parse_round_trip_picks_the_payload_model_from_the_type() -> None:
    p = make_packet(
        PacketType.EVENTS, {"facts": [{"text": "t", "score": 1.0}]}, run_id="r", src="1", seq=3, token_used=7
    )
    assert isinstance(p, EventsPacket) and p.payload.facts[0].candidate is None
    assert parse_packet(p.to_dict()) == p
    assert "candidate" not in p.to_dict()["payload"]["facts"][0]  # absent optional fields stay off the wire
    # the same payload under another type is validated against that type's model
    with pytest.raises(FrameError, match="invalid packet field 'payload.passages'"):
        parse_packet({**p.to_dict(), "type": "search_docs"})
    # a payload model of the wrong type is refused when building a packet
    with pytest.raises(FrameError, match="invalid packet field 'payload'"):
        make_packet(PacketType.EVENTS, SearchDocs(passages=[], n_chunks=0), run_id="r", src="1", seq=1)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"type": "gossip", "run_id": "r", "src": "1", "seq": 0}, "unknown packet type 'gossip'"),
        ({"run_id": "r", "src": "1", "seq": 0}, "packet has no 'type'"),
        ({"type": "events", "src": "1", "seq": 0, **EV}, "invalid packet field 'run_id'"),
        ({"type": "events", "run_id": "../up", "src": "1", "seq": 0, **EV}, "invalid packet field 'run_id'"),
        ({"type": "events", "run_id": "r", "src": "1", "seq": -1, **EV}, "invalid packet field 'seq'"),
        ({"type": "events", "run_id": "r", "src": "1", "seq": 0, "extra": 1, **EV}, "invalid packet field 'extra'"),
        ({"type": "events", "run_id": "r", "src": "1", "seq": 0, "token_used": -5, **EV}, "'token_used'"),
        ({"type": "events", "run_id": "r", "src": "1", "seq": 0}, "invalid packet field 'payload'"),
        ({"type": "events", "run_id": "r", "src": "1", "seq": 0, "payload": {"facts": [{"text": 1, "score": 0}]}},
         "invalid packet field 'payload.facts.0.text'"),
        ([1, 2], "packet must be an object"),
    ],
)  # fmt: skip
def test_parse_rejects_with_precise_message(data: object, message: str) -> None:
    with pytest.raises(FrameError, match=message):
        parse_packet(data)
    if isinstance(data, dict):  # the relay's one-pass JSON path says the same
        with pytest.raises(FrameError, match=message):
            parse_packet_json(json.dumps(data).encode())


def test_json_path_names_malformed_json() -> None:
    with pytest.raises(FrameError, match=r"json frame: malformed JSON \(.*line 1 column 2"):
        parse_packet_json(b"{oops")
    with pytest.raises(FrameError, match="packet must be a JSON object"):
        parse_packet_json(b"[1, 2]")


def test_packet_schema_reads_what_the_relay_sends_and_refuses_what_parse_packet_refuses() -> None:
    relays = doc_init("r1", "The farm has 148 megawatts.", "How big is the farm?", 10).to_dict()
    schema = packet_schema(["doc_init"])
    jsonschema.validate(relays, schema)
    untyped = {k: v for k, v in relays.items() if k != "type"}
    for bad in (untyped, {**relays, "extra": 1}, {**relays, "run_id": "../up"}, {**relays, "payload": {}}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
        with pytest.raises(FrameError):
            parse_packet(bad)
    # Several types: one of them, picked by its type; what an agent emits (absent optional fields
    # left off the wire) reads, and a packet of another type does not.
    emitted = make_packet(PacketType.SEARCH_DOCS, SearchDocs(passages=[], n_chunks=3), run_id="r1", src="0", seq=1)
    either = packet_schema(["search_docs", "error"])
    jsonschema.validate(emitted.to_dict(), either)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(relays, either)
    assert sorted(either["discriminator"]["mapping"]) == ["error", "search_docs"]
    jsonschema.Draft202012Validator.check_schema(packet_schema(PacketType))  # every type: a valid schema
    with pytest.raises(ValueError):
        packet_schema(["telegram"])
    with pytest.raises(ValueError):
        packet_schema([])
