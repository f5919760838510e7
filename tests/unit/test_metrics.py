import json
from pathlib import Path

from gaiamesh.metrics import FrameLog, totals_from_log


def test_frame_log_lines_and_totals(tmp_path: Path) -> None:
    log = FrameLog(tmp_path / "frames.jsonl", 0.0)
    pkt = {"type": "events", "tag": None, "token_used": 7}
    log.record(
        src="network",
        dst=["0", "1"],
        blob=b"abcd",
        received=False,
        status="accepted",
        packet=pkt,
        header_size=1,
    )
    log.record(
        src="0", dst=["1"], blob=b"abcdef", received=True, status="accepted", packet=pkt, header_size=2
    )
    log.record(src="0", dst=[], blob=b"zz", received=True, status="rejected", error="bad")
    log.close()
    lines = [json.loads(x) for x in (tmp_path / "frames.jsonl").read_text().splitlines()]
    assert lines[0]["b64"] == "YWJjZA==" and lines[0]["tx_bytes"] == 8 and lines[0]["rx_bytes"] == 0
    assert totals_from_log(tmp_path / "frames.jsonl") == {
        "bytes_rx": 8,
        "bytes_tx": 14,
        "pkt_cnt": 2,
        "header_overhead": 1 * 2 + 2 * (1 + 1),
        "token_sum": 14,
        "rejected_cnt": 1,
    }
