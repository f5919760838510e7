"""The counting tap: HTTP read as a passive observer (plain calls), the kernel's counts, and the
tap itself between a real HTTP client and a real server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import socket
import struct

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from gaiamesh.deploy.local import free_port
from gaiamesh.mesh.native.tap import HttpMeter, Tap, parse_tcp_info, tcp_info


def test_the_meter_counts_bodies_apart_from_heads_and_chunking_over_a_kept_alive_connection() -> None:
    meter = HttpMeter()
    req = b"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello"
    meter.up(req[:20])
    meter.up(req[20:])
    meter.down(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
    meter.up(b"GET /y HTTP/1.1\r\nHost: a\r\n\r\n")
    meter.down(b"HTTP/1.1 204 No Content\r\n\r\n")
    assert (meter.requests, meter.responses) == (2, 2)
    assert (meter.body_up, meter.body_down) == (5, 5)
    assert meter.parsed


def test_bytes_that_are_not_http_are_still_counted_but_not_split() -> None:
    meter = HttpMeter()
    meter.up(b"\x16\x03\x01 not http at all\r\n\r\n")
    assert not meter.parsed
    meter.up(b"more")  # no error after the first
    assert meter.requests == 0


def test_tcp_info_is_read_at_this_kernels_offsets() -> None:
    raw = bytearray(232)
    raw[5] = 1  # timestamps
    struct.pack_into("=Q", raw, 128, 700)
    struct.pack_into("=II", raw, 136, 9, 8)
    struct.pack_into("=Q", raw, 200, 1234)
    info = parse_tcp_info(bytes(raw))
    assert info is not None
    assert (info.bytes_sent, info.bytes_received, info.segs_out, info.segs_in) == (1234, 700, 9, 8)
    assert info.header_bytes == 17 * 52
    assert parse_tcp_info(bytes(100)) is None


def test_the_kernels_bytes_sent_equal_what_was_written() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(server.getsockname())
    peer, _ = server.accept()
    client.sendall(b"x" * 5000)
    got = b""
    while len(got) < 5000:
        got += peer.recv(65536)
    info = tcp_info(client)
    for s in (client, peer, server):
        s.close()
    if info is None:
        pytest.skip("this kernel's TCP_INFO has no byte counts")
    assert info.bytes_sent == 5000 and info.segs_out >= 1


async def _app(request: Request) -> Response:
    body = await request.body()
    if request.url.path == "/stream":

        async def parts():  # type: ignore[no-untyped-def]
            for part in (b"a" * 10, b"b" * 20):
                yield part

        return StreamingResponse(parts())
    return Response(body[::-1], headers={"Connection": "close"} if request.url.path == "/close" else {})


async def test_the_tap_counts_what_a_real_client_and_server_move_and_how_many_connections() -> None:
    sock = socket.create_server(("127.0.0.1", 0))  # listening before uvicorn serves: no wait
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(Starlette(routes=[Route("/{p}", _app, methods=["POST"])]),
                                           log_level="error", lifespan="off"))  # fmt: skip
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    tap = Tap("127.0.0.1", port)
    await tap.start()
    sizes: list[int] = []

    def count(request: httpx.Request) -> None:
        sizes.append(len(request.content))

    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{tap.port}") as http:
            for path in ("/keep", "/keep", "/stream", "/close", "/keep"):
                r = await http.post(path, content=b"x" * 100)
                assert r.status_code == 200
        await asyncio.sleep(0)
    finally:
        await tap.close()
        server.should_exit = True
        await serving
    totals = tap.books.totals()
    assert totals.requests == 5
    assert totals.body_tx == 500
    assert totals.body_rx == 100 + 100 + 30 + 100 + 100
    assert totals.connections == 2  # the close ended one; the last request opened another
    assert totals.connections_reused == 1
    assert totals.http_tx > totals.body_tx and totals.http_rx > totals.body_rx  # heads, chunking
    assert totals.unparsed == 0 and totals.refused == 0
    if totals.segs_out:  # Linux: the kernel's own counts of the agent side
        assert totals.tcp_bytes_sent == totals.http_tx
        assert totals.ip_tcp_header_bytes >= 40 * (totals.segs_out + totals.segs_in)


async def test_a_tap_whose_agent_is_gone_counts_the_refusal_and_the_client_sees_it() -> None:
    tap = Tap("127.0.0.1", free_port())
    await tap.start()
    try:
        async with httpx.AsyncClient() as http:
            with pytest.raises(httpx.HTTPError):
                await http.post(f"http://127.0.0.1:{tap.port}/x", content=b"x")
    finally:
        await tap.close()
    assert tap.books.totals().refused == 1


def test_each_exchange_is_counted_whole_and_a_stream_left_open_by_its_head() -> None:
    meter = HttpMeter()
    req = b"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello"
    meter.up(req)
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    meter.down(head)
    meter.down(b"3\r\nabc\r\n0\r\n\r\n")  # 13 bytes: the body and the chunked framing
    get = b"GET /events HTTP/1.1\r\nHost: a\r\n\r\n"
    meter.up(get)
    meter.down(head)  # a stream of events the server holds open
    meter.down(b"a\r\n: ping\r\n\r\n\r\n")
    first, held = meter.exchanges
    assert (first.up, first.down, first.ended) == (len(req), len(head) + 13, True)
    assert first.bytes == len(req) + len(head) + 13
    assert (held.up, held.ended) == (len(get), False)
    assert held.bytes == len(get) + len(head)  # the ping after the head is not the opening's


async def test_the_first_requests_bytes_include_an_answer_the_client_did_not_wait_for() -> None:
    """A protocol's client may return from its first exchange before the answer to a request it
    sent on the way has crossed the tap (MCP's 202 to its initialized notice): read then, the
    count missed those bytes. Read from the tap's exchanges once they ended, it is whole."""
    held, release = asyncio.Event(), asyncio.Event()

    async def answer(request: Request) -> Response:
        await request.body()
        if request.url.path == "/later":
            held.set()  # the request crossed the tap whole (it counts before it forwards)
            await release.wait()  # the answer comes after the client has moved on
        return Response(b"ok" * 50)

    sock = socket.create_server(("127.0.0.1", 0))
    app = Starlette(routes=[Route("/{p}", answer, methods=["POST"])])
    server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="off"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    tap = Tap("127.0.0.1", sock.getsockname()[1])
    await tap.start()
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{tap.port}") as http:
            assert (await http.post("/first", content=b"x" * 10)).status_code == 200
            notice = asyncio.create_task(http.post("/later", content=b"y" * 10))  # not waited for
            await held.wait()
            at_return = tap.books.totals()  # what the gateway read when the first exchange returned
            release.set()
            assert (await notice).status_code == 200
            first_bytes = tap.books.first_bytes(2)
    finally:
        await tap.close()
        server.should_exit = True
        await serving
    whole = tap.books.totals()
    assert first_bytes == whole.http_tx + whole.http_rx  # both exchanges, both ways
    assert at_return.http_tx + at_return.http_rx < first_bytes  # the old reading missed the held answer
