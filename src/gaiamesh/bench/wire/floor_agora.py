"""Agora's floor: the ``agora-protocol`` SDK alone, as its README shows it: a ``Receiver`` in the
SDK's ``ReceiverServer`` (Flask) run by Flask's own server (``server.run(port=...)``: werkzeug,
threaded), and on the sender's side the SDK's ``SimpleSenderTransporter``, whose conversation
``requests.post``s each message on a session of its own: a new connection per request, by the
SDK's design. The message names the protocol by its hash, its document inline as a ``data:``
URI, as the SDK's sender does for a protocol published nowhere.

What the SDK cannot do here without a model, replaced by the parts our agent server uses
(``mesh/protocols/agora/server.py``), named: the receiver's protocol checker, programmer,
responder and negotiator ask a model (``toolformer``): ours accept our document only and hand
back the fixed routine; its ``JSONStorage`` rewrites a file on every message: ours keeps it in
memory; its ``RestrictedExecutor`` ``ast.parse``s in many threads at once, which this Python
(before 3.11.8, gh-106905) can fail: ours is the SDK's plain executor; and its receiver fails
two first messages that arrive at once (``StorageError``): ours takes one at a time. The echo
tool answers the packet as a one-element JSON array, as our agent server's tool does.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any

from ...errors import RunError

Send = Any  # floor.Send (not imported: floor imports this module)


def agora_wsgi() -> Any:
    """The SDK's Flask app of a model-free echo receiver."""
    from agora.common.toolformers.base import Tool
    from agora.receiver import ReceiverMemory, ReceiverServer

    from ...mesh.protocols.agora import server as ours

    def handle_packet(packet: str) -> str:
        return f"[{packet}]"

    tool = Tool("handle_packet", "echoes the packet",
                {"type": "object", "properties": {"packet": {"type": "string"}}, "required": ["packet"]},
                {"type": "string", "description": "a JSON array of one packet"}, handle_packet)  # fmt: skip
    receiver = ours.LockedReceiver(
        ReceiverMemory(ours.MemoryStorage()), ours.NoModel(), ours.OurDocumentOnly(), ours.NoModel(),
        ours.FixedProgrammer(), ours.QuietExecutor(), [tool], implementation_threshold=1,
    )  # fmt: skip
    return ReceiverServer(receiver).app


def serve(app: Any, port: int) -> Any:
    """Flask's own server for ``app`` (what ``ReceiverServer.run`` -> ``Flask.run`` makes), listening
    now; its ``serve_forever`` is the caller's to run, in a thread."""
    from werkzeug.serving import make_server

    return make_server("127.0.0.1", port, app, threaded=True)


@asynccontextmanager
async def agora_client(url: str) -> AsyncIterator[Send]:
    """The SDK's sender transport; ``requests`` blocks, so each peer posts from a thread of its own."""
    from agora.sender.components.transporter import SimpleSenderTransporter
    from agora.utils import encode_as_data_uri

    from ...mesh.protocols.agora.envelope import DOCUMENT, PROTOCOL_HASH

    transporter, sources = SimpleSenderTransporter(), [encode_as_data_uri(DOCUMENT)]

    def post(body: str) -> str:
        with transporter.new_conversation(f"{url}/", False, PROTOCOL_HASH, sources) as conversation:
            reply = conversation(body)
        if reply.get("status") != "success":
            raise RunError(f"agora floor: {str(reply)[:300]}")
        return str(reply["body"])

    with ThreadPoolExecutor(1, thread_name_prefix="agora-floor") as pool:

        async def send(blob: bytes) -> int:
            return len(await asyncio.get_running_loop().run_in_executor(pool, post, blob.decode()))

        yield send
