"""ports.py: a listening socket whose accepted connections asyncio sends on without delay."""

from __future__ import annotations

import asyncio
import socket

import uvicorn

from gaiamesh import ports


async def nodelay_of_accepted(listening: socket.socket) -> int:
    """TCP_NODELAY of the server side of one connection asyncio accepts on ``listening``."""
    accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.set_result(writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    server = await asyncio.start_server(handle, sock=listening)
    async with server:
        _, writer = await asyncio.open_connection(*listening.getsockname()[:2])
        try:
            return await asyncio.wait_for(accepted, 10)
        finally:
            writer.close()


def test_a_socket_uvicorn_binds_is_declared_tcp_and_its_connections_send_at_once() -> None:
    config = uvicorn.Config(app=None, host="127.0.0.1", port=0)  # type: ignore[arg-type]
    bare = config.bind_socket()
    assert bare.proto == 0  # what asyncio reads: no TCP_NODELAY on its connections
    assert asyncio.run(nodelay_of_accepted(bare)) == 0
    declared = ports.declared_tcp(config.bind_socket())
    assert declared.proto == socket.IPPROTO_TCP
    assert asyncio.run(nodelay_of_accepted(declared)) != 0
