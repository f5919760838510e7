"""Ports on this machine: whether one is free, and who holds it when it is not.

Standard library only: ``scripts/check-ports.py`` (run by ``make up`` before any venv exists)
imports it from ``src/`` as well as the package's own commands.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess

_SS_USER = re.compile(r'users:\(\("([^"]+)",pid=(\d+)')


def taken(port: int, host: str = "127.0.0.1") -> bool:
    """Whether ``host:port`` cannot be bound right now (something listens on it)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False


def declared_tcp(sock: socket.socket) -> socket.socket:
    """The listening socket ``sock``, made again from its descriptor so that its ``proto`` says TCP.

    A socket made with protocol 0 (uvicorn's ``Config.bind_socket()``, ``socket.create_server``)
    is TCP all the same, but asyncio turns Nagle's algorithm off (``TCP_NODELAY``) only on the
    connections of a socket whose ``proto`` is ``IPPROTO_TCP``. Without it the answer to a request
    on a kept-alive connection waits for the client's delayed ACK: about 40 ms a request, measured
    by ``gaiamesh bench-wire``. Made from its descriptor, the socket asks the kernel, which says TCP.
    """
    return socket.socket(fileno=sock.detach())


def _docker_container(port: int) -> str | None:
    """The name of a running container that publishes ``port``, if docker can say."""
    if shutil.which("docker") is None:
        return None
    try:
        out = subprocess.run(
            ["docker", "ps", "--filter", f"publish={port}", "--format", "{{json .}}"],
            capture_output=True, text=True, timeout=30,  # a daemon busy with a stack can take 10 s
        ).stdout  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in out.splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        project = (row.get("Labels") or "").partition("com.docker.compose.project=")[2].split(",")[0]
        return f"container {row.get('Names')}" + (f" of compose project {project!r}" if project else "")
    return None


def holder(port: int) -> str:
    """Who listens on ``port``: a container that publishes it, or the process ``ss`` names."""
    try:
        out = subprocess.run(["ss", "-Hltnp", f"sport = :{port}"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        out = ""
    m = _SS_USER.search(out)
    process = f"{m.group(1)} (pid {m.group(2)})" if m else None
    if process is None or process.startswith("docker-proxy"):
        return _docker_container(port) or process or "another program"
    return process
