"""The bench's servers, floor and ours, in one process of their own (``python -m
gaiamesh.bench.wire.servers``), so that their CPU is read apart from the clients' (the process
answers its own CPU time on a pipe, :class:`ServerProcess`): the blocks run one at a time, so
a block's server CPU is its own.

Each server is a uvicorn of its own on its own port. The floor's runs with uvicorn's defaults
(as an SDK's documentation serves it: HTTP parser ``auto``, 5 s keep-alive, the app's lifespan,
its listening socket made as ``uvicorn.run`` makes it); ours as an agent's native server runs
(``agents/native.py``: h11, no lifespan, keep-alive from ``mesh/native/pool.py``, its socket from
``Config.bind_socket()`` declared TCP by ``ports.declared_tcp``). Both on asyncio's own loop, as
the agents and the relay run.

Both sockets say TCP, so asyncio sets ``TCP_NODELAY`` on their connections. This bench found the
agents' did not (``bind_socket()`` makes protocol 0): a kept-alive request then waited ~40 ms on
Nagle's algorithm against the client's delayed ACK (docs/results/2026-12-05-wire-floor.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from ... import ports
from ...errors import RunError
from .. import procs

READY_TIMEOUT_S = 60.0
SIDES = ("floor", "ours")


@dataclass(frozen=True)
class Served:
    """One server: its protocol and side, the port it listens on and the tap's in front of it."""

    protocol: str
    side: str
    port: int
    tap_port: int

    def spec(self) -> str:
        return f"{self.protocol}:{self.side}:{self.port}:{self.tap_port}"

    @classmethod
    def parse(cls, text: str) -> Served:
        protocol, side, port, tap = text.split(":")
        if side not in SIDES:
            raise ValueError(f"{text!r}: a side is floor or ours")
        return cls(protocol, side, int(port), int(tap))


class ServerProcess:
    """The servers' process, as the bench sees it: its pid, and its CPU time on request."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.pid = proc.pid

    async def cpu_ns(self) -> int:
        """The process's CPU time, every thread's, those that ended too (``CLOCK_PROCESS_CPUTIME_ID``
        read by the process itself: ``/proc``'s per-thread counts lose a thread that ends, and its
        per-process ticks are 10 ms)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(b"cpu\n")
        await self.proc.stdin.drain()
        while line := await self.proc.stdout.readline():
            if line.strip().isdigit():  # not a line an SDK printed
                return int(line)
        raise RunError("the bench's server process ended")


@contextlib.asynccontextmanager
async def server_process(
    served: list[Served], keep_alive_s: int, keys_dir: Path, log: Path, trust: Path | None = None
) -> AsyncIterator[ServerProcess]:
    """Every server of ``served`` in one process, until the bench ends; ``trust``: the bundle of
    CAs it trusts (``SSL_CERT_FILE``), for anp's verifier, which resolves the relay's DID document
    over HTTPS from the relay's DID host, as an agent's environment sets it."""
    args = [sys.executable, "-m", "gaiamesh.bench.wire.servers", str(keep_alive_s), str(keys_dir),
            *(s.spec() for s in served)]  # fmt: skip
    env = {**os.environ, "SSL_CERT_FILE": str(trust)} if trust is not None else None
    with log.open("wb") as err:
        proc = await asyncio.create_subprocess_exec(
            *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=err, env=env
        )
    try:
        await procs.ready(proc, log, "server process", READY_TIMEOUT_S)
        yield ServerProcess(proc)
    finally:
        await procs.stop(proc)


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield  # many servers in one process: the process's own handler stops them all


def _config(s: Served, keep_alive_s: int, keys_dir: Path) -> uvicorn.Config:
    from .floor import floor_app
    from .ours import ours_app

    if s.side == "floor":
        return uvicorn.Config(floor_app(s.protocol, f"http://127.0.0.1:{s.tap_port}"), host="127.0.0.1",
                              port=s.port, log_level="warning", loop="asyncio")  # fmt: skip
    return uvicorn.Config(ours_app(s.protocol, keys_dir), host="127.0.0.1", port=s.port, lifespan="off",
                          log_level="warning", access_log=False, http="h11",
                          timeout_keep_alive=keep_alive_s)  # fmt: skip


def _listening(s: Served, config: uvicorn.Config) -> socket.socket:
    """The server's socket, listening now (a client's connect waits in the backlog until it
    serves): ours as an agent makes it, the floor's as ``uvicorn.run`` does."""
    if s.side == "ours":
        sock = ports.declared_tcp(config.bind_socket())
    else:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((config.host, config.port))
    sock.listen(config.backlog)
    return sock


@contextlib.contextmanager
def _wsgi_floors(served: list[Served]) -> Iterator[list[Served]]:
    """The floors an SDK serves with its own WSGI server (agora's Flask), each in a thread of its
    own, listening on return; the rest of ``served`` is the caller's, for uvicorn."""
    from .floor import WSGI_FLOORS
    from .floor_agora import agora_wsgi, serve

    wsgi = [s for s in served if s.side == "floor" and s.protocol in WSGI_FLOORS]
    servers = [serve(agora_wsgi(), s.port) for s in wsgi]
    for server in servers:
        threading.Thread(target=server.serve_forever, name="wsgi-floor", daemon=True).start()
    try:
        yield [s for s in served if s not in wsgi]
    finally:
        for server in servers:
            server.shutdown()  # returns once serve_forever has ended


async def _serve(served: list[Served], keep_alive_s: int, keys_dir: Path) -> None:
    with _wsgi_floors(served) as rest:
        await _serve_asgi(rest, keep_alive_s, keys_dir)


async def _serve_asgi(served: list[Served], keep_alive_s: int, keys_dir: Path) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    configs = [_config(s, keep_alive_s, keys_dir) for s in served]
    servers = [_Server(c) for c in configs]
    sockets = [_listening(s, c) for s, c in zip(served, configs, strict=True)]
    async with asyncio.TaskGroup() as tasks:
        for server, sock in zip(servers, sockets, strict=True):
            tasks.create_task(server.serve(sockets=[sock]))
        print("ready", flush=True)
        answering = tasks.create_task(_answer_cpu(stop))
        await stop.wait()
        answering.cancel()
        for server in servers:
            server.should_exit = True


async def _answer_cpu(stop: asyncio.Event) -> None:
    """Each ``cpu`` line on standard input answered with this process's CPU time, ns; the end of
    the input (the bench gone) stops the servers."""
    reader = asyncio.StreamReader()
    await asyncio.get_running_loop().connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), sys.stdin
    )
    while await reader.readline():
        sys.stdout.write(f"{time.process_time_ns()}\n")
        sys.stdout.flush()
    stop.set()


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print("usage: python -m gaiamesh.bench.wire.servers KEEP_ALIVE_S KEYS_DIR PROTOCOL:SIDE:PORT:TAP_PORT...",
              file=sys.stderr)  # fmt: skip
        return 2
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    asyncio.run(_serve([Served.parse(a) for a in argv[2:]], int(argv[0]), Path(argv[1])))
    return 0


if __name__ == "__main__":  # server_process starts it
    raise SystemExit(main(sys.argv[1:]))
