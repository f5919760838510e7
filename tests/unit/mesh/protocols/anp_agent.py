"""The agent side of test_anp.py, in a process of its own (``python anp_agent.py KEYS_DIR NODE PORT``).

A process of its own because the SDK's DID resolver trusts only what ``SSL_CERT_FILE`` named
when aiohttp was first imported, as in a real agent, whose environment sets it at start.

The fake agent answers by the packet's question: ``echo`` -> one events packet whose fact is
the question in capitals; ``two`` -> two packets, 50 ms apart; ``silent`` -> nothing; a blob that
is not a packet -> FrameError (the binding answers with JSON-RPC -32602).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from starlette.routing import Mount

from gaiamesh.mesh.frames import PacketType, make_packet, parse_packet
from gaiamesh.mesh.native import binding
from gaiamesh.mesh.protocols import canonical_json


class FakeAgent:
    def __init__(self, node_id: str):
        self.node_id = node_id
        self.tool = "extract"
        self.description = "Reads the passages and extracts candidate facts."
        self.consumes = frozenset({"search_docs", "doc_init"})
        self.replay_window_s = 60.0

    def reply(self, text: str, run_id: str, seq: int) -> bytes:
        packet = make_packet(
            PacketType.EVENTS,
            {"facts": [{"text": text, "score": 1.0}]},
            run_id=run_id,
            src=self.node_id,
            seq=seq,
        )
        return canonical_json(packet.to_dict())

    async def answer(self, blob: bytes, inner: str) -> AsyncIterator[bytes]:
        packet = parse_packet(json.loads(blob))  # FrameError for anything that is not a packet
        if packet.question == "silent":
            return
        yield self.reply(packet.question.upper(), packet.run_id, packet.seq + 1)
        if packet.question == "two":
            await asyncio.sleep(0.05)
            yield self.reply("SECOND", packet.run_id, packet.seq + 2)


def main() -> None:
    keys_dir, node, port = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    agent_app = binding("anp").app(FakeAgent(node), keys_dir)
    app = Starlette(routes=[Mount("/anp", app=agent_app)])
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
