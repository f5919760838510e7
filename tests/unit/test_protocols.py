import pytest

from gaiamesh.protocols import ProtocolError, available, get_adapter


def packet() -> dict:
    return {"type": "events", "run_id": "r1", "src": "1", "seq": 1, "payload": {"facts": [{"text": "héllo ✓"}]}}


def test_json_round_trip_and_zero_header() -> None:
    a = get_adapter("json")
    blob = a.encode(packet())
    assert a.decode(blob) == packet()
    assert a.header_size(packet()) == 0


@pytest.mark.parametrize(
    ("blob", "message"),
    [
        (b"{not json", "malformed JSON"),
        (b"[1,2]", "expected a JSON object, got list"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_json_rejects_bad_bytes(blob: bytes, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        get_adapter("json").decode(blob)


def test_registry_names_unknown_protocol() -> None:
    assert "json" in available()
    with pytest.raises(ValueError, match="unknown protocol 'carrier-pigeon'"):
        get_adapter("carrier-pigeon")
