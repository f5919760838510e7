"""What a protocol costs per message, apart from the model: the relay's time to decode,
validate and verify each frame that comes in (``decode_us`` in the frame log), the agents'
time to encode (and sign) each frame they send (``encode_us`` in their ``memory.json``), the
bytes of a message and the share of them that is the protocol's header.

Pure: the records and the agents' times come in as data."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from ..mesh.records import FrameRecord, Totals
from ..mesh.wireend import WireLayers
from .metrics import WireCost


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q`` quantile by the nearest rank (a measured value, never an interpolation)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def protocol_cost(records: Iterable[FrameRecord], encode_us: Sequence[float]) -> WireCost:
    """The per-message fields of ``metrics.json`` (rounded to 0.1 µs, 0.1 byte, 0.0001)."""
    # a copy network faults lost (dropped_fault) is no message of its own: it repeats its frame's
    frames = [r for r in records if r.status not in ("rejected", "dropped_fault")]
    decode = [r.decode_us for r in frames if r.decode_us is not None]
    size = sum(r.size for r in frames)

    def rounded(v: float | None, digits: int = 1) -> float | None:
        return None if v is None else round(v, digits)

    return WireCost(
        decode_us_p50=rounded(percentile(decode, 0.5)),
        decode_us_p95=rounded(percentile(decode, 0.95)),
        encode_us_p50=rounded(percentile(encode_us, 0.5)),
        encode_us_p95=rounded(percentile(encode_us, 0.95)),
        bytes_per_msg=rounded(size / len(frames)) if frames else None,
        header_share=round(sum(r.header_size for r in frames) / size, 4) if size else None,
    )


def enveloped(
    layers: WireLayers, cost: WireCost, totals: Totals, records: Iterable[FrameRecord]
) -> tuple[WireLayers, WireCost]:
    """A native run's envelope: the HTTP bodies' bytes less the frames' (``envelope_bytes``), and
    the header share with it, so that the share compares the same thing on both transports (on
    the relay's WebSocket the envelope is in the frame, on the protocol's own wire around it)."""
    envelope = max(0, layers.body_tx + layers.body_rx - totals.bytes_tx - totals.bytes_rx)
    frames = [r for r in records if r.status not in ("rejected", "dropped_fault")]
    size, header = sum(r.size for r in frames), sum(r.header_size for r in frames)
    share = round((header + envelope) / (size + envelope), 4) if size + envelope else None
    return layers.model_copy(update={"envelope_bytes": envelope}), cost.model_copy(update={"header_share": share})
