"""What WIRE_TLS costs (bench/tls/): the order, spreads, paired ratios and noise verdicts by
plain calls, the counting proxy against an echo server, and one small real run against real agents."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from gaiamesh.agents.catalog import subscriptions
from gaiamesh.bench.stats import median_interval
from gaiamesh.bench.tls import cpu, results, run
from gaiamesh.bench.tls.measure import frame
from gaiamesh.bench.tls.proxy import CountingProxy
from gaiamesh.bench.tls.report import markdown
from gaiamesh.bench.tls.results import MODES, SIZES, LoadRecord, ModeRound, Round
from gaiamesh.bench.tls.summary import order, ratio, spread, summarize
from gaiamesh.mesh.frames import PacketType
from gaiamesh.mesh.protocols import get_adapter
from gaiamesh.mesh.wiretls import WireTls

CALM = LoadRecord(load_1m=0.1, cpu_other=0.0, steal_pct=0.0, containers=None, seconds=2.0, contended=False)


def _round(index: int, values: dict[str, dict[str, float]], warmup: bool = False) -> Round:
    modes = [ModeRound(mode=m, connect_ms=[values[m]["connect_ms"]], values=values[m], cipher="") for m in order(index)]
    return Round(index=index, warmup=warmup, order=order(index), load=CALM, modes=modes)


def test_each_mode_leads_one_round_in_three_and_every_round_has_every_mode() -> None:
    leads = [order(k)[0] for k in range(3)]
    assert sorted(leads) == sorted(MODES)
    assert all(sorted(order(k)) == sorted(MODES) for k in range(7))
    assert order(3) == order(0)


def test_spread_is_the_median_and_the_tenth_percentiles() -> None:
    s = spread([float(v) for v in range(11)])  # 0..10
    assert (s.median, s.p10, s.p90, s.n) == (5.0, 1.0, 9.0, 11)
    one = spread([3.0])
    assert (one.median, one.p10, one.p90) == (3.0, 3.0, 3.0)


def test_a_ratio_is_paired_round_by_round_and_judged_against_one() -> None:
    # off drifts from round to round; tls stays twice it in each: the pairing sees 2.0 exactly
    beyond = ratio([2.0, 4.0, 6.0], [1.0, 2.0, 3.0])
    assert beyond is not None and beyond.median == 2.0 and beyond.verdict == "beyond noise"
    within = ratio([0.9, 1.1, 1.05, 0.95], [1.0, 1.0, 1.0, 1.0])
    assert within is not None and within.low <= 1.0 <= within.high and within.verdict == "within noise"
    single = ratio([3.0], [1.0])
    assert single is not None and single.verdict == "one round: no verdict"
    assert ratio([1.0], [0.0]) is None  # a reference of 0 gives no ratio


def test_the_median_interval_is_seeded_and_holds_the_median() -> None:
    values = [1.0, 1.2, 0.8, 1.1, 0.9, 1.3]
    assert median_interval(values) == median_interval(values)
    low, high = median_interval(values)
    assert low <= 1.05 <= high


def test_the_warm_up_round_is_left_out_of_every_figure() -> None:
    def values(off: float, tls: float, mtls: float) -> dict[str, dict[str, float]]:
        return {"off": {"connect_ms": off, "close_B": 10}, "tls": {"connect_ms": tls, "close_B": 100},
                "mtls": {"connect_ms": mtls, "close_B": 100}}  # fmt: skip

    rounds = [_round(0, values(1000.0, 1.0, 1.0), warmup=True), _round(1, values(1.0, 2.0, 3.0)),
              _round(2, values(2.0, 4.0, 6.0)), _round(3, values(1.0, 1.0, 3.0))]  # fmt: skip
    measures = {m.key: m for m in summarize(rounds)}
    connect = measures["connect_ms"]
    assert connect.modes["off"].median == 1.0 and connect.modes["off"].n == 3
    assert connect.ratios["tls"].median == 2.0 and connect.ratios["mtls"].median == 3.0
    assert connect.ratios["mtls"].verdict == "beyond noise"
    assert connect.ratios["tls"].verdict == "within noise"  # 1.0 in one round of three
    assert measures["close_B"].ratios["tls"].median == 10.0
    assert measures["handshake_up_B"].modes == {}  # a measure no round has: empty, not an error
    text = markdown(_result(rounds))
    assert "| close bytes, both ways | B | 10.0 | 100 | 100 | 10.00× [10.00, 10.00] |" in text
    assert "connect_agent (TCP + TLS + upgrade + admission), wall under tls" in text  # named within noise
    assert "0 (warm-up, discarded)" in text


def _result(rounds: list[Round]) -> results.TlsCost:
    config = results.Config(rounds=3, connects=1, messages=1, sizes=list(SIZES), handshakes=1, bytes_frames=1,
                            protocol="json", agent="a", relay_cpu="r", agent_cpu="a", python="3", openssl="o",
                            websockets="w", cpus=2)  # fmt: skip
    return results.TlsCost(started="now", seconds=1.0, config=config, contended_rounds=0,
                           measures=summarize(rounds), rounds=rounds)  # fmt: skip


def test_a_frame_is_a_packet_of_exactly_its_size_that_a_search_agent_ignores() -> None:
    for size in SIZES:
        blob = frame(size)
        assert len(blob) == size
        assert get_adapter("json").decode_packet(blob).type is PacketType.EVENTS
    assert PacketType.EVENTS.value not in subscriptions()[results.TOOL]


def test_cpu_time_is_read_from_proc_and_grows_with_work() -> None:
    assert cpu.schedstat_ns("8680260 3516723 2\n") == 8680260
    before = cpu.cpu_ns(os.getpid())
    end = time.process_time() + 0.05
    while time.process_time() < end:
        pass  # burn 50 ms of CPU
    assert cpu.cpu_ns(os.getpid()) - before >= 40_000_000


async def test_the_proxy_forwards_unchanged_and_counts_each_way() -> None:
    async def echo(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        while data := await r.read(65536):
            w.write(data * 2)  # twice back: the two directions differ
            await w.drain()
        w.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    async with server, CountingProxy(server.sockets[0].getsockname()[1]) as proxy:
        r, w = await asyncio.open_connection("127.0.0.1", proxy.port)
        w.write(b"hello")
        assert await r.readexactly(10) == b"hellohello"
        w.write_eof()
        assert await r.read() == b""
        w.close()
        tally = proxy.tallies[-1]
        await asyncio.wait_for(tally.done.wait(), 5)
    assert (tally.up, tally.down) == (5, 10)


def test_a_small_real_run_writes_its_files_and_tls_costs_handshake_bytes(tmp_path: Path) -> None:
    result = run.run_tlscost(tmp_path, rounds=1, connects=3, messages=30)
    for name in ("tlscost.json", "tlscost.md", "tlscost.png"):
        assert (tmp_path / name).stat().st_size > 0
    assert results.read(tmp_path / "tlscost.json") == result
    m = {x.key: x for x in result.measures}

    def median(key: str, mode: WireTls) -> float:
        return m[key].modes[mode].median

    for way in ("handshake_up_B", "handshake_down_B"):
        assert median(way, "off") < median(way, "tls") < median(way, "mtls"), way
    assert m["handshake_up_B"].ratios["mtls"].median > 1.0
    for size in SIZES:
        # a masked client frame: 2 bytes of header, 2 of length (126..65535), 4 of mask
        assert median(f"frame_B_{size}", "off") == size + 8
        # a TLS 1.3 record around it: a 5-byte header, the inner content type and a 16-byte tag
        assert median(f"frame_B_{size}", "tls") == median(f"frame_B_{size}", "mtls") == size + 8 + 22
    assert [r.warmup for r in result.rounds] == [True, False]
    assert all(mr.cipher.startswith("TLSv1.3") for r in result.rounds for mr in r.modes if mr.mode != "off")
