"""bench-wire (bench/wire/): the payloads and the summary by plain calls, and one small real run
(real SDK servers in their own process, real SDK clients and ours, through the counting tap),
checked for sense, not speed; and our keep-alive protocols reusing their connections."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from gaiamesh.bench.tls.results import LoadRecord
from gaiamesh.bench.wire.report import summarize, table
from gaiamesh.bench.wire.results import SIZES, Block, payload
from gaiamesh.bench.wire.run import check, run_wire
from gaiamesh.errors import ConfigError

CALM = LoadRecord(load_1m=0.1, cpu_other=0.0, steal_pct=0.0, containers=None, seconds=2.0, contended=False)


def _block(side: str, round_: int, ms: float, connections: int = 1) -> Block:
    return Block(protocol="json", side=side, peers=1, round=round_, warmup=round_ == 0, requests=10, errors=0,
                 ms=[ms] * 10, seconds=1.0, client_cpu_ms=10.0, server_cpu_ms=10.0, bytes=5000, http_requests=10,
                 connections=connections, reused=1 if connections == 1 else 0, load=CALM)  # fmt: skip


def test_a_payload_is_a_json_object_of_its_size() -> None:
    for size in SIZES:
        blob = payload(size, 3)
        assert len(blob) == size and json.loads(blob)["seq"] == 3


def test_the_summary_pairs_rounds_leaves_the_warm_up_out_and_says_a_connection_per_request() -> None:
    blocks = [_block("floor", 0, 100.0), _block("ours", 0, 900.0)]  # warm-up: would make the ratio 9
    blocks += [
        b
        for r in (1, 2, 3)
        for b in (_block("floor", r, 1.0 * r, connections=10), _block("ours", r, 2.0 * r))
    ]
    [row] = summarize(blocks)
    assert row.ratio is not None and row.ratio.median == 2.0 and row.ratio.verdict == "beyond noise"
    assert (row.floor_conns, row.ours_conns) == (1.0, 0.1)
    assert "SDK alone opens a connection per request" in row.note
    assert "**> 1.3×**" in "\n".join(table([row]))


def test_bad_options_are_refused_in_the_users_words() -> None:
    with pytest.raises(ConfigError, match="no SDK floor for nope"):
        check(["json", "nope"], [1], 1, 1)
    with pytest.raises(ConfigError, match="at least 1"):
        check(["json"], [0], 1, 1)


def test_a_small_real_run_makes_sense_and_our_keep_alive_protocols_reuse_connections(tmp_path: Path) -> None:
    # the keep-alive protocols (json's plain binding, a2a, acp): the SDKs' floors and ours, at 1
    # and 3 peers, 4 requests each
    protocols = ["json", "a2a", "acp"]
    result = run_wire(tmp_path, protocols, [1, 3], requests=4, rounds=1)
    assert {(r.protocol, r.peers) for r in result.rows} == {(p, n) for p in protocols for n in (1, 3)}
    for block in result.blocks:
        assert block.errors == 0, block.error
        assert len(block.ms) == block.requests == block.peers * 4
        assert block.bytes > block.requests * min(SIZES)  # every frame crossed the tap, both ways
        assert block.http_requests >= block.requests and block.connections >= 1
        assert block.server_cpu_ms > 0 and block.client_cpu_ms > 0
        if block.side == "ours":  # keep-alive protocols: no new connection for each request
            assert block.connections < block.requests, (block.protocol, block.peers, block.connections)
    for row in result.rows:
        assert row.ratio is not None and math.isfinite(row.ratio.median) and row.ratio.median > 0
        assert row.floor_bytes > 0 and row.ours_bytes > 0
    for name in ("wire.json", "wire.csv", "wire.md", "wire.png"):
        assert (tmp_path / name).stat().st_size > 0
    assert "| a2a | 3 |" in (tmp_path / "wire.md").read_text()


def test_anp_and_agora_floors_run_and_the_table_says_their_sdks_open_a_connection_per_request(
    tmp_path: Path,
) -> None:
    # anp: the SDK's ANPClient (an aiohttp session a call) against FastANP's DID-WBA verifier,
    # resolving the relay's DID over HTTPS; agora: the SDK's requests.post against its Flask
    # receiver on Flask's own server. Ours: anp keeps its connection, agora cannot.
    result = run_wire(tmp_path, ["anp", "agora"], [2], requests=2, rounds=1)
    for block in result.blocks:
        assert block.errors == 0, block.error
        assert len(block.ms) == block.requests and block.bytes > block.requests * min(SIZES)
        per_request = block.side == "floor" or block.protocol == "agora"
        assert (block.connections >= block.requests) == per_request, (block.protocol, block.side, block.connections)
    for row in result.rows:
        assert "SDK alone opens a connection per request" in row.note, row
        assert row.ratio is not None and math.isfinite(row.ratio.median) and row.ratio.median > 0


def test_mcp_ours_does_what_the_sdks_own_client_does_on_the_same_connections(tmp_path: Path) -> None:
    """Ours starts as the SDK's ``Client(url)`` starts (server/discover, no session, no standing
    GET), so each peer's client keeps one connection for its whole life, as the floor's does: a
    2025 session took a second one for its GET stream, and its SSE answers one each before the
    transport read them to their end."""
    result = run_wire(tmp_path, ["mcp"], [2], requests=4, rounds=1)
    for round_ in (0, 1):
        floor, ours = (
            next(b for b in result.blocks if (b.side, b.round) == (side, round_)) for side in ("floor", "ours")
        )
        assert floor.errors == ours.errors == 0, (floor.error, ours.error)
        assert ours.connections == floor.connections == 2, (floor.connections, ours.connections)
        # one POST per call inside the window; the SDK's Client(url) lists the tools before its
        # first call's result (to check it against an output schema), ours at connect
        assert ours.http_requests == 8 and floor.http_requests == 8 + 2, (ours.http_requests, floor.http_requests)
