import pytest

from gaiamesh.frames import FrameError, Packet, PacketType, chunk_document, doc_init


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
    assert [len(c) for c in p.payload["chunks"]] == [400, 400, 200]


def test_parse_round_trip() -> None:
    p = Packet(type=PacketType.EVENTS, run_id="r", src="1", seq=3, payload={"facts": []}, token_used=7)
    assert Packet.parse(p.to_dict()) == p


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"type": "gossip", "run_id": "r", "src": "1", "seq": 0}, "unknown packet type 'gossip'"),
        ({"type": "events", "src": "1", "seq": 0}, "invalid packet field 'run_id'"),
        ({"type": "events", "run_id": "r", "src": "1", "seq": -1}, "invalid packet field 'seq'"),
        ({"type": "events", "run_id": "r", "src": "1", "seq": 0, "extra": 1}, "invalid packet field 'extra'"),
        ({"type": "events", "run_id": "r", "src": "1", "seq": 0, "token_used": -5}, "'token_used'"),
        ([1, 2], "packet must be an object"),
    ],
)
def test_parse_rejects_with_precise_message(data: object, message: str) -> None:
    with pytest.raises(FrameError, match=message):
        Packet.parse(data)
