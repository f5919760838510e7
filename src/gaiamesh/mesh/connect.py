"""The relay's side of connecting to an agent: the WebSocket handshake that names the run's
protocol (:func:`subprotocol`), proves the run's mesh token (``admission.py``) and reads what the
agent announces (``frames.Announcement``). The relay calls :func:`connect_agent` at the start of a
run, to reach a lost agent again, and for a replica DNS gave; :func:`write_frames` sends on the
connection it made."""

from __future__ import annotations

import asyncio
import functools
import ssl
import time
from collections.abc import Mapping
from pathlib import Path

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidHandshake, InvalidStatus
from websockets.protocol import State

from ..errors import ConnectError, ForeignAgent, FrameError
from ..settings import AgentSpec, Settings
from . import admission, wiretls
from .frames import Announcement
from .subprotocols import subprotocol


async def connect_agent(spec: AgentSpec, settings: Settings, deadline: float) -> tuple[ClientConnection, Announcement | None]:
    """Connect to the agent ``spec`` names before ``deadline`` (trying again while it starts),
    check that it is one of this run's (it proves the run's mesh token), speaks the run's protocol
    and is the agent AGENTS names; returns the connection and what the agent announced (None: an
    agent that announces nothing, such as a bench's plain WebSocket server)."""
    last: Exception | None = None
    token = settings.mesh_token
    tls = relay_tls(settings)
    url = spec.url if tls is None else "wss" + spec.url.removeprefix("ws")
    while time.monotonic() < deadline:
        asked = admission.relay_headers(token)
        try:
            ws = await connect(
                url,
                ssl=tls,
                additional_headers=asked,
                # No permessage-deflate: it would compress every frame behind the protocol's
                # back, so bytes_tx/bytes_rx would not be what crosses the wire (and it costs
                # ~80 µs a hop here).
                compression=None,
                subprotocols=[subprotocol(settings.protocol)],
                max_size=4 * settings.max_frame_bytes,
                open_timeout=max(0.5, min(5.0, deadline - time.monotonic())),
            )
            break
        except InvalidStatus as exc:
            if exc.response.status_code == 403 and (token or tls):
                what = f"refused this relay: {_body(exc)}" if tls else "refused this run's mesh token"
                raise _foreign(spec, what, url) from exc
            last = exc
        except ssl.SSLCertVerificationError as exc:
            what = f"showed no certificate of this mesh's CA ({exc.verify_message})"
            raise _foreign(spec, what, url) from exc
        except (OSError, InvalidHandshake, TimeoutError) as exc:
            last = exc
        await asyncio.sleep(0.25)  # retry back-off while the agent starts
    else:
        raise ConnectError(
            f"agent {spec.node_id} ({spec.tool}) not reachable at {spec.url} after "
            f"{settings.connect_timeout:.0f}s: {last!r}"
        )
    try:
        if tls is not None and (named := wiretls.peer_node(ws.transport)) != spec.announces:
            what = f"showed the certificate of node {named!r}, not of node {spec.announces!r}"
            raise _foreign(spec, what, url)
        headers = ws.response.headers if ws.response else None
        said = admitted(spec, settings, asked, headers, spec.url, subprotocol(settings.protocol))
    except ConnectError:
        await ws.close()
        raise
    if said is not None and ws.subprotocol != subprotocol(settings.protocol):
        # An agent of ours that cannot speak this run's protocol (e.g. no signing key).
        await ws.close()
        raise ConnectError(
            f"agent {spec.node_id} ({spec.tool}) at {spec.url} does not speak protocol "
            f"{settings.protocol!r}"
        )
    return ws, said


def admitted(
    spec: AgentSpec, settings: Settings, asked: Mapping[str, str], headers: Mapping[str, str] | None, where: str,
    speaks: str,
) -> Announcement | None:
    """What the agent announced in its handshake answer's ``headers``, once it proved the run's
    mesh token, speaking what the relay asked for (``speaks``: the subprotocol it offered, or the
    native hello), and is the agent AGENTS names (:class:`ForeignAgent` or :class:`ConnectError`
    otherwise); None for an agent that announces nothing. The WebSocket handshake and the native
    wire's hello both end here."""
    token = settings.mesh_token
    proof = headers.get(admission.HEADER_AGENT_PROOF) if headers is not None else None
    try:
        said = Announcement.from_headers(headers) if headers is not None else None
    except FrameError as exc:
        if token and not proof:  # not one of ours: what it says is not ours to read
            raise _foreign(spec, "did not prove this run's mesh token") from exc
        raise ConnectError(f"agent {spec.node_id} ({spec.tool}) at {where}: {exc}") from exc
    if token and not (said and admission.agent_admitted(
            token, asked[admission.HEADER_CHALLENGE], proof, said.node_id, said.tool, speaks)):  # fmt: skip
        raise _foreign(spec, "did not prove this run's mesh token")
    # A replica found through a dns: entry announces the entry's node id (its NODE_ID,
    # shared with the other replicas); the relay knows it as the replica's own id.
    if said is not None and (said.tool != spec.tool or said.node_id not in ("", spec.announces)):
        raise ConnectError(
            f"agent at {where} announces node {said.node_id!r} with tool {said.tool!r}, "
            f"but AGENTS names node {spec.announces!r} with tool {spec.tool!r}"
        )
    return said

def relay_tls(settings: Settings) -> ssl.SSLContext | None:
    """The relay's TLS context under WIRE_TLS (None: plain TCP), made once per process."""
    return _relay_tls(settings.wire_tls, Path(settings.keys_dir))


@functools.cache
def _relay_tls(mode: wiretls.WireTls, keys_dir: Path) -> ssl.SSLContext | None:
    return wiretls.relay_context(mode, keys_dir)


def _body(exc: InvalidStatus) -> str:
    return exc.response.body.decode("utf-8", "replace").strip()[:200] if exc.response.body else "403"


def _foreign(spec: AgentSpec, what: str, url: str = "") -> ForeignAgent:
    """What answers at ``spec``'s address ``what`` (refused the relay, proved nothing, ...); the
    advice about a port clash is the error's ``hint``, apart from what happened."""
    return ForeignAgent(
        f"what answers at {url or spec.url} (agent {spec.node_id}, {spec.tool}) {what}: it is not one of "
        "this run's agents",
        f"Another stack or bench holds port {spec.port}? Start this run's agents on other ports (--base-port), "
        "or stop the other (make down)",
    )


def write_frames(ws: ClientConnection, blobs: list[bytes]) -> None:
    """Send ``blobs`` as binary frames in one socket write, without waiting on the agent.

    Through websockets' Sans-I/O protocol, as its ``broadcast`` does, but coalesced: a burst of
    frames to one agent costs one ``send()``, not one each. A slow agent's bytes wait in its
    own transport buffer; nobody else waits for it. A closing connection is skipped: its work
    in flight is redelivered when the relay notices it is gone."""
    if ws.protocol.state is not State.OPEN:
        return
    for blob in blobs:
        ws.protocol.send_binary(blob)
    ws.transport.write(b"".join(ws.protocol.data_to_send()))
