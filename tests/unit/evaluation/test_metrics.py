from pathlib import Path

from gaiamesh.evaluation.metrics import read_log, totals_from_log
from gaiamesh.mesh.records import AgentMetrics, FrameLog, FrameRecord, Totals


def rec(n: int, **kw: object) -> FrameRecord:
    return FrameRecord.of(n=n, t_ms=1.0, **kw)  # type: ignore[arg-type]


def test_frame_log_lines_and_totals(tmp_path: Path) -> None:
    log = FrameLog(tmp_path / "frames.jsonl")
    records = [
        rec(0, src="network", dst=["0", "1"], blob=b"abcd", received=False, status="accepted",
            type="doc_init", token_used=7, header_size=1),
        rec(1, src="0", dst=["1"], blob=b"abcdef", received=True, status="accepted", type="events",
            token_used=7, seq=1, header_size=2),
        rec(2, src="0", dst=[], blob=b"zz", received=True, status="rejected", error="bad"),
        rec(3, src="network", dst=["1"], blob=b"abcdef", received=False, status="redelivered",
            type="events", token_used=7, header_size=2),
    ]  # fmt: skip
    log.write(records[:2])
    log.write(records[2:])
    log.close()
    lines = read_log(tmp_path / "frames.jsonl")
    assert lines == records
    assert lines[0].b64 == "YWJjZA==" and lines[0].tx_bytes == 8 and lines[0].rx_bytes == 0
    assert totals_from_log(tmp_path / "frames.jsonl") == {
        "bytes_rx": 8,
        "bytes_tx": 20,
        "pkt_cnt": 3,
        "header_overhead": 1 * 2 + 2 * (1 + 1) + 2 * 1,
        "token_sum": 14,  # the redelivery repeats a packet already counted
        "rejected_cnt": 1,
    }


def test_per_agent_counts_fold_from_the_same_records() -> None:
    agents = {"0": AgentMetrics(node_id="0", tool="search"), "1": AgentMetrics(node_id="1", tool="extract")}
    totals = Totals()
    totals.add(rec(0, src="network", dst=["0", "1"], blob=b"abcd", received=False, status="accepted"), agents)
    totals.add(rec(1, src="0", dst=["1"], blob=b"abcdef", received=True, status="accepted", token_used=5,
                   seq=1), agents)  # fmt: skip
    totals.add(rec(2, src="0", dst=[], blob=b"zz", received=True, status="rejected", error="bad"), agents)
    a0, a1 = agents["0"], agents["1"]
    assert (a0.pkts_sent, a0.bytes_sent, a0.rejected, a0.token_used) == (2, 8, 1, 5)
    assert (a0.pkts_received, a0.bytes_received) == (1, 4)
    assert (a1.pkts_received, a1.bytes_received, a1.pkts_sent) == (2, 10, 0)
    assert totals.frames == 3 and totals.bytes_rx == a0.bytes_sent


def test_bench_groups_runs_by_the_stages_left_out() -> None:
    from gaiamesh.bench.compare.report import label

    full = {"protocol": "json", "strategy": "pipeline", "ablated": ""}
    ablated = {"protocol": "json", "strategy": "pipeline", "ablated": "extract,triple"}
    assert label(full, 1, 2) == "all stages · json" and label(ablated, 1, 2) == "without extract, triple · json"
    assert label(ablated, 1, 1) == "json" and label({"protocol": "baseline"}, 2, 2) == "baseline"


def test_a_step_whose_server_gave_no_counts_makes_the_sum_unknown_not_short(tmp_path: Path) -> None:
    agents = {"0": AgentMetrics(node_id="0", tool="search"), "1": AgentMetrics(node_id="1", tool="extract")}
    totals = Totals()
    totals.add(rec(0, src="0", dst=["1"], blob=b"ab", received=True, status="accepted", token_used=9), agents)
    totals.add(rec(1, src="1", dst=["0"], blob=b"cd", received=True, status="accepted", token_used=None), agents)
    assert totals.token_sum is None and agents["0"].token_used == 9 and agents["1"].token_used is None
    log = FrameLog(tmp_path / "frames.jsonl")
    log.write([rec(0, src="1", dst=[], blob=b"x", received=True, status="accepted", token_used=None)])
    log.close()
    assert read_log(tmp_path / "frames.jsonl")[0].token_used is None  # written and read back as null
    assert totals_from_log(tmp_path / "frames.jsonl")["token_sum"] is None


def test_the_models_time_is_that_of_the_steps_whose_packets_the_log_counted() -> None:
    from gaiamesh.evaluation.modeltime import model_time

    records = [
        rec(0, src="network", dst=["0", "1"], blob=b"abcd", received=False, status="accepted"),
        rec(1, src="0", dst=["1"], blob=b"abcdef", received=True, status="accepted", seq=1),
        rec(2, src="1", dst=["0"], blob=b"abc", received=True, status="accepted", seq=1),
        rec(3, src="0", dst=[], blob=b"zz", received=True, status="rejected", seq=2, error="bad"),
        rec(4, src="network", dst=["1"], blob=b"abcdef", received=False, status="redelivered"),
    ]  # fmt: skip
    memories = {
        "0": {"steps": [{"seq": 1, "llm_ms": 2.5}, {"seq": 2, "llm_ms": 100.0}, {"seq": 3, "llm_ms": 7.0}]},
        "1": {"steps": [{"seq": 1, "llm_ms": 0.25}]},
    }
    # seq 2 was rejected and seq 3 never reached the log: neither is the run's model time
    assert model_time(records, memories) == (2.75, {"0": 2.5, "1": 0.25})
    assert model_time(records, {"1": memories["1"]}) == (0.25, {"0": 0.0, "1": 0.25})  # a missing workspace
