"""The native binding of the protocols with no SDK of their own. Plain HTTP, the baseline of
what HTTP itself costs: one ``POST`` per frame whose body is the protocol's own frame (``json``,
``binary``, ``compressed``, ``signed``), answered with the frames the agent emitted, each behind
its 4-byte big-endian length. With ``stream`` the answer is
chunked and each frame leaves as the agent emits it; without, it is one body at the end."""

from __future__ import annotations

import struct
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp

from ...errors import FrameError
from .native import AgentEndpoint, Binding, NativeClient, Peer, Undelivered

MEDIA_TYPE = "application/x-gaiamesh-frames"
STREAM_HEADER = "X-Gaiamesh-Stream"
_LEN = struct.Struct(">I")


def framed(blob: bytes) -> bytes:
    return _LEN.pack(len(blob)) + blob


class Unframer:
    """Splits a byte stream of length-prefixed frames (plain code: tested by plain calls)."""

    def __init__(self) -> None:
        self._buf = b""

    def feed(self, data: bytes) -> list[bytes]:
        self._buf += data
        frames = []
        while len(self._buf) >= _LEN.size:
            (n,) = _LEN.unpack_from(self._buf)
            if len(self._buf) < _LEN.size + n:
                break
            frames.append(self._buf[_LEN.size : _LEN.size + n])
            self._buf = self._buf[_LEN.size + n :]
        return frames

    @property
    def rest(self) -> int:
        return len(self._buf)


class PlainBinding(Binding):
    streams = True

    def __init__(self, protocol: str) -> None:
        self.name = self.inner = protocol
        self.mount = f"/http/{protocol}"

    def app(self, agent: AgentEndpoint, keys_dir: Path) -> ASGIApp:
        inner = self.inner

        async def frames(request: Request) -> Response:
            answers = agent.answer(await request.body(), inner)
            try:
                first = await anext(answers, None)  # decoding happens before the first frame
            except FrameError as exc:
                return PlainTextResponse(f"rejected: {exc}\n", status_code=400)
            if request.headers.get(STREAM_HEADER) == "1":
                return StreamingResponse((framed(b) async for b in _rest(first, answers)), media_type=MEDIA_TYPE)
            body = b"".join([framed(b) async for b in _rest(first, answers)])
            return Response(body, media_type=MEDIA_TYPE)

        return Starlette(routes=[Route("/frames", frames, methods=["POST"])])

    def client(self, peer: Peer, http: httpx.AsyncClient, stream: bool = False) -> NativeClient:
        return PlainClient(peer, http, stream)


async def _rest(first: bytes | None, answers: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    if first is not None:
        yield first
        async for blob in answers:
            yield blob


class PlainClient(NativeClient):
    def __init__(self, peer: Peer, http: httpx.AsyncClient, stream: bool) -> None:
        self.url = f"{peer.base_url}/frames"
        self.http = http
        self.headers = {"Content-Type": MEDIA_TYPE, **({STREAM_HEADER: "1"} if stream else {})}

    async def send(self, blob: bytes) -> AsyncIterator[bytes]:
        try:
            async with self.http.stream("POST", self.url, content=blob, headers=self.headers) as response:
                if response.status_code != 200:
                    text = (await response.aread()).decode(errors="replace").strip()
                    raise Undelivered(f"POST {self.url} answered {response.status_code}: {text}")
                unframer = Unframer()
                async for data in response.aiter_raw():
                    for frame in unframer.feed(data):
                        yield frame
                if unframer.rest:
                    raise Undelivered(f"POST {self.url}: the answer ended inside a frame ({unframer.rest} bytes)")
        except httpx.HTTPError as exc:
            raise Undelivered(f"POST {self.url}: {type(exc).__name__}: {exc}") from exc


def binding(protocol: str) -> Binding:
    return PlainBinding(protocol)
