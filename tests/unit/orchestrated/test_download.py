"""file_downloader against a real HTTP server on 127.0.0.1: the size cap on raw bytes, the
address policy, redirects checked again, no partial file left behind."""

from __future__ import annotations

import gzip
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.responses import RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from gaiamesh.deploy.local import free_port, wait_until_answers
from gaiamesh.orchestrated.download import DownloadError, check_address, download
from gaiamesh.orchestrated.files import Files

BIG = 300_000


async def small(_request: object) -> Response:
    return Response(b"hello world", media_type="text/plain")


async def streamed(_request: object) -> StreamingResponse:
    async def body() -> AsyncIterator[bytes]:
        for _ in range(BIG // 1000):
            yield b"x" * 1000

    return StreamingResponse(body(), media_type="application/octet-stream")  # no Content-Length


async def zipped(_request: object) -> Response:
    # 200 kB of zeros compress to a few hundred bytes: the cap counts what crosses the wire.
    return Response(gzip.compress(b"\0" * 200_000), headers={"Content-Encoding": "gzip"})


def app(port: int) -> Starlette:
    return Starlette(
        routes=[
            Route("/small", small), Route("/big", streamed), Route("/zipped", zipped),
            Route("/to-small", lambda r: RedirectResponse("/small", 302)),
            Route("/to-private", lambda r: RedirectResponse("http://10.1.2.3/secret", 302)),
            Route("/loop", lambda r: RedirectResponse("/loop", 302)),
            Route("/health", small),
        ]
    )  # fmt: skip


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    port = free_port()
    srv = uvicorn.Server(uvicorn.Config(app(port), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    wait_until_answers(f"{url}/health", lambda: None, 20, "test server")
    yield url
    srv.should_exit = True
    thread.join(timeout=10)


ALLOW = ["127.0.0.1"]


async def test_downloads_within_the_cap(server: str, tmp_path: Path) -> None:
    files = Files(tmp_path)
    assert await download(f"{server}/small", files, "a.txt", ALLOW, 1000, 5) == ("a.txt", 11)
    assert (tmp_path / "a.txt").read_bytes() == b"hello world"
    assert await download(f"{server}/to-small", files, "b.txt", ALLOW, 1000, 5) == ("b.txt", 11)
    # the cap counts raw bytes: a small compressed body passes, and it is stored as it came
    _, size = await download(f"{server}/zipped", files, "z.gz", ALLOW, 5_000, 5)
    assert size < 5_000 and gzip.decompress((tmp_path / "z.gz").read_bytes()) == b"\0" * 200_000


async def test_past_the_cap_the_transfer_stops_and_no_file_is_left(server: str, tmp_path: Path) -> None:
    with pytest.raises(DownloadError, match="more than the cap of 100000 bytes"):
        await download(f"{server}/big", Files(tmp_path), "big.bin", ALLOW, 100_000, 5)
    assert not (tmp_path / "big.bin").exists()


async def test_the_address_policy(server: str, tmp_path: Path) -> None:
    files = Files(tmp_path)
    with pytest.raises(DownloadError, match="127.0.0.1.* non-public address"):
        await download(f"{server}/small", files, "x", [], 1000, 5)  # loopback, not on the allowlist
    with pytest.raises(DownloadError, match="10.1.2.3.* non-public address"):
        await download(f"{server}/to-private", files, "x", ALLOW, 1000, 5)  # the redirect is checked again
    with pytest.raises(DownloadError, match="more than 5 redirects"):
        await download(f"{server}/loop", files, "x", ALLOW, 1000, 5)
    for url, message in [("file:///etc/passwd", "only http and https"), ("http://169.254.169.254/latest", "non-public"),
                         ("http://[::1]:80/", "non-public"), ("http:///nohost", "without a host")]:  # fmt: skip
        with pytest.raises(DownloadError, match=message):
            await check_address(url, [])
    assert not list(tmp_path.iterdir())
    with pytest.raises(ValueError, match="'..' is refused"):
        await download(f"{server}/small", files, "../escape.txt", ALLOW, 1000, 5)
