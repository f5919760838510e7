"""The protocol's cost per message, from frame records and the agents' encode times."""

from __future__ import annotations

from gaiamesh.evaluation.wirecost import enveloped, percentile, protocol_cost
from gaiamesh.mesh.records import FrameRecord, Totals
from gaiamesh.mesh.wireend import WireLayers


def rec(size: int, header: int, decode_us: float | None, status: str = "accepted") -> FrameRecord:
    r = FrameRecord.of(n=0, t_ms=0.0, src="1", dst=["2"], blob=b"x" * size, received=True, status=status,
                       header_size=header, decode_us=decode_us)  # type: ignore[arg-type]  # fmt: skip
    return r


def test_percentiles_are_measured_values_by_nearest_rank() -> None:
    values = [float(v) for v in range(1, 21)]  # 1 .. 20
    assert percentile(values, 0.5) == 10.0 and percentile(values, 0.95) == 19.0
    assert percentile([7.0], 0.95) == 7.0 and percentile([], 0.5) is None


def test_the_cost_per_message_leaves_rejected_frames_out_of_bytes_and_header() -> None:
    records = [rec(100, 20, 30.0), rec(300, 20, 50.0), rec(50, 0, None), rec(999, 0, 900.0, "rejected")]
    cost = protocol_cost(records, [12.0, 8.0, 10.0])
    assert cost.decode_us_p50 == 30.0 and cost.decode_us_p95 == 50.0  # the relay's own frame has none
    assert cost.encode_us_p50 == 10.0 and cost.encode_us_p95 == 12.0
    assert cost.bytes_per_msg == 150.0 and cost.header_share == round(40 / 450, 4)
    empty = protocol_cost([], [])
    assert set(empty.model_dump().values()) == {None}


def test_on_the_native_wire_the_envelope_around_the_frames_joins_the_header_share() -> None:
    records = [rec(100, 0, 30.0), rec(300, 0, 50.0), rec(999, 0, 900.0, "rejected")]
    totals = Totals()
    for r in records:
        totals.add(r)
    layers = WireLayers(body_tx=totals.bytes_tx + 150, body_rx=totals.bytes_rx + 50)  # 200 bytes of JSON-RPC, say
    got, cost = enveloped(layers, protocol_cost(records, []), totals, records)
    assert got.envelope_bytes == 200 and got.body_tx == layers.body_tx  # the rest as counted
    assert cost.header_share == round(200 / 600, 4) and cost.bytes_per_msg == 200.0
    none, _ = enveloped(WireLayers(), protocol_cost([], []), Totals(), [])
    assert none.envelope_bytes == 0
