"""The relay's DID host for ``anp`` on its own wire: its did:wba document, served over HTTPS
(the ANP SDK resolves documents over https only) with the certificate of the local CA that
``generate_keys`` issues beside the keys (``mesh/localtls.py``).

One host serves every native ``anp`` run of a process that uses the same keys (the service runs
several at once): the first run starts it on a free port and publishes the relay's document
naming ``ANP_DID_HOSTNAME:<port>``; the last run to finish stops it."""

from __future__ import annotations

import asyncio
import shutil
import socket
import tempfile
from pathlib import Path

import uvicorn

from ....ports import declared_tcp
from ...frames import NETWORK_SRC
from .did import did_host_app, publish_did

TLS_CERT, TLS_KEY = "local-tls.pem", "local-tls-key.pem"  # localtls.issue_tls writes them beside the keys


class DidHost:
    def __init__(self, keys_dir: Path, hostname: str) -> None:
        self.keys_dir, self.hostname = keys_dir, hostname
        self.users = 0
        self.port = 0
        self.dir = keys_dir  # where the published document and the keys the relay's client reads are
        self._server: uvicorn.Server | None = None
        self._serving: asyncio.Task[None] | None = None  # owned here: stop() awaits it
        self.ready = asyncio.Event()

    async def start(self) -> None:
        # Reachable by name from the agents: loopback only when they find it as localhost.
        bind = "127.0.0.1" if self.hostname == "localhost" else "0.0.0.0"  # noqa: S104 (a container's own network)
        sock = declared_tcp(socket.create_server((bind, 0)))  # TCP_NODELAY on its connections
        self.port = int(sock.getsockname()[1])
        # The document is published in a folder of this host's own: KEYS_DIR may be read-only
        # (compose mounts each key file), and another process's host may name another port.
        self.dir = Path(tempfile.mkdtemp(prefix="gaiamesh-did-"))
        for name in (f"{NETWORK_SRC}.pem", "public.json", TLS_CERT, TLS_KEY):
            shutil.copy2(self.keys_dir / name, self.dir / name)
        publish_did(self.dir, f"{self.hostname}:{self.port}")
        config = uvicorn.Config(
            did_host_app(self.dir), lifespan="off", log_level="warning", access_log=False,
            ssl_certfile=str(self.dir / TLS_CERT), ssl_keyfile=str(self.dir / TLS_KEY),
        )  # fmt: skip
        self._server = uvicorn.Server(config)
        self._serving = asyncio.get_running_loop().create_task(self._server.serve(sockets=[sock]))
        self.ready.set()  # the socket listens already: a fetch waits in its backlog

    async def stop(self) -> None:
        if self._server is not None and self._serving is not None:
            self._server.should_exit = True
            await self._serving
        shutil.rmtree(self.dir, ignore_errors=True)


_HOSTS: dict[Path, DidHost] = {}


async def acquire(keys_dir: Path, hostname: str) -> DidHost:
    """The process's DID host for ``keys_dir``, started by the first run that needs it."""
    host = _HOSTS.get(keys_dir.resolve())
    if host is None:
        host = _HOSTS[keys_dir.resolve()] = DidHost(keys_dir, hostname)
        host.users += 1
        await host.start()
    else:
        host.users += 1
        await host.ready.wait()
    return host


async def release(host: DidHost) -> None:
    """A run is done with the DID host; the last one stops it."""
    host.users -= 1
    if host.users == 0:
        _HOSTS.pop(host.keys_dir.resolve(), None)
        await host.stop()
