"""``file_downloader``: fetch a URL into the workspace, within a size cap, a timeout and an
address policy.

- Only ``http`` and ``https``. A host on the allowlist (by default the offline ``web``
  service) is allowed; any other host must resolve only to public addresses: loopback,
  private, link-local, reserved and multicast addresses are refused.
- Redirects are followed by hand (at most five) and each new address is checked again.
- The size cap counts the raw bytes received (``Accept-Encoding: identity`` is sent, so a
  compressed body cannot expand past it); past the cap the transfer stops and the partial file
  is removed.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Callable, Iterable
from urllib.parse import urljoin, urlsplit

import httpx

from ..errors import ToolError
from .files import Files

MAX_REDIRECTS = 5


class DownloadError(ToolError):
    """A download refused or failed, with the reason."""


async def check_address(url: str, allow: Iterable[str]) -> None:
    """Raise :class:`DownloadError` unless ``url`` may be fetched."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise DownloadError(f"only http and https URLs may be downloaded, not {parts.scheme or 'no scheme'!r}")
    host = parts.hostname
    if not host:
        raise DownloadError(f"URL without a host: {url!r}")
    allowed = {h.lower() for h in allow}
    if host.lower() in allowed or (parts.port and f"{host}:{parts.port}".lower() in allowed):
        return
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, parts.port or 80, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise DownloadError(f"cannot resolve {host!r}: {exc}") from exc
    for info in infos:
        address = ipaddress.ip_address(info[4][0])
        if (
            address.is_loopback or address.is_private or address.is_link_local or address.is_reserved
            or address.is_multicast or address.is_unspecified
        ):  # fmt: skip
            raise DownloadError(f"{host!r} resolves to {address}, a non-public address (not on the allowlist)")


async def fetch(
    url: str, allow: Iterable[str], max_bytes: int, io_timeout: float, write: Callable[[bytes], object]
) -> tuple[str, int]:
    """GET ``url`` under the policy, handing each raw chunk to ``write``; returns the final URL
    (after redirects) and the bytes received."""
    allow = list(allow)
    async with httpx.AsyncClient(timeout=io_timeout, follow_redirects=False) as client:
        for _ in range(MAX_REDIRECTS + 1):
            await check_address(url, allow)
            async with client.stream("GET", url, headers={"Accept-Encoding": "identity"}) as response:
                if response.is_redirect:
                    location = response.headers.get("location")
                    if not location:
                        raise DownloadError(f"{url} redirects without a Location")
                    url = urljoin(url, location)
                    continue  # the new address is checked again before it is fetched
                if response.status_code != 200:
                    raise DownloadError(f"{url} answered HTTP {response.status_code}")
                declared = response.headers.get("content-length")
                if declared and declared.isdigit() and int(declared) > max_bytes:
                    raise DownloadError(f"{url} is {declared} bytes, over the cap of {max_bytes}")
                received = 0
                async for chunk in response.aiter_raw():
                    received += len(chunk)
                    if received > max_bytes:
                        raise DownloadError(f"{url} sent more than the cap of {max_bytes} bytes; stopped")
                    write(chunk)
                return url, received
    raise DownloadError(f"{url}: more than {MAX_REDIRECTS} redirects")


async def download(
    url: str, files: Files, relative: str, allow: Iterable[str], max_bytes: int, io_timeout: float
) -> tuple[str, int]:
    """Fetch ``url`` to ``relative`` in the workspace; returns ``(relative, bytes)``. A failed or
    capped transfer leaves no file behind."""
    target = files.path(relative)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with target.open("wb") as out:
            _, received = await fetch(url, allow, max_bytes, io_timeout, out.write)
    except BaseException:
        target.unlink(missing_ok=True)
        raise
    return relative, received
