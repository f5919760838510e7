"""``gaiamesh bench-overhead``: what the harness itself costs, measured side by side in one run.

1. Relay cost per frame: round trip of a realistic packet sender -> receiver -> sender
   (a) over a plain loopback WebSocket, (b) through the real ``MeshNetwork`` relay (decode,
   validate, count, frame log), (c) through a Redis pub/sub fan-out (when ``redis-server`` is
   installed; the benchmark starts its own on a free port).
2. Model server speed: generated tokens/s of our Ollama-compatible server (through the official
   ``ollama`` client) against raw ``llama-cpp-python`` on the same model, prompt and settings.

Results go to ``overhead.json`` and ``overhead.md``; ratios are what to compare across machines.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve

from .frames import FINAL_ANSWER_TAG, PacketType, make_packet
from .relay import MeshNetwork
from .routing import RoutingMode
from .settings import Settings
from .tasks import Task

console = Console()
PAYLOAD = {"facts": [{"text": "The farm has an installed capacity of 148 megawatts. " * 20, "score": 1.0}]}
SEARCH_PAYLOAD = {
    "passages": [{"chunk": 0, "score": 1.0, "text": "The farm has an installed capacity of 148 megawatts. " * 20}],
    "n_chunks": 1,
}
FINAL_PAYLOAD = {
    "answer": "148 megawatts", "method": "reading", "question": "q?", "reading": "148 megawatts",
    "candidates": [], "facts_used": 1, "triples_seen": 0,
}  # fmt: skip
PAYLOADS: dict[PacketType, dict[str, Any]] = {PacketType.EVENTS: PAYLOAD, PacketType.SEARCH_DOCS: SEARCH_PAYLOAD, PacketType.DATA_EVENT: FINAL_PAYLOAD}


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "n": len(samples),
        "median_us": round(statistics.median(ordered) * 1e6, 1),
        "p90_us": round(ordered[int(0.9 * (len(ordered) - 1))] * 1e6, 1),
        "mean_us": round(statistics.fmean(ordered) * 1e6, 1),
    }


def _frame(run_id: str, src: str, seq: int, ptype: PacketType, tag: str | None = None) -> bytes:
    packet = make_packet(ptype, PAYLOADS[ptype], run_id=run_id, src=src, seq=seq, tag=tag)
    return json.dumps(packet.to_dict()).encode()


async def plain_websocket(frames: int) -> list[float]:
    """Round trips over one loopback WebSocket: send a packet, the peer answers with one."""
    blob = _frame("bench", "0", 1, PacketType.EVENTS)

    async def echo(ws: ServerConnection) -> None:
        async for message in ws:
            await ws.send(message)

    port = _port()
    samples = []
    async with serve(echo, "127.0.0.1", port), connect(f"ws://127.0.0.1:{port}") as ws:
        for _ in range(frames):
            t0 = time.perf_counter()
            await ws.send(blob)
            await ws.recv()
            samples.append(time.perf_counter() - t0)
    return samples


async def through_relay(frames: int, workdir: Path) -> list[float]:
    """Round trips through the real relay: agent 0 -> relay -> agent 1 -> relay -> agent 0."""
    p0, p1 = _port(), _port()
    samples: list[float] = []
    settings = Settings(
        agents=f"0=search@127.0.0.1:{p0},1=extract@127.0.0.1:{p1}",
        routing=RoutingMode.BROADCAST,
        protocol="json",
        workspace_root=workdir / "ws",
        run_timeout=600,
    )
    stop = asyncio.Event()

    async def sender(ws: ServerConnection) -> None:
        async for message in ws:
            packet = json.loads(message)
            if packet["type"] != "doc_init":
                continue
            run_id = packet["run_id"]
            for seq in range(1, frames + 1):
                t0 = time.perf_counter()
                await ws.send(_frame(run_id, "0", seq, PacketType.SEARCH_DOCS))
                await ws.recv()  # agent 1's answer, relayed back
                samples.append(time.perf_counter() - t0)
            await ws.send(_frame(run_id, "0", frames + 1, PacketType.DATA_EVENT, FINAL_ANSWER_TAG))

    async def receiver(ws: ServerConnection) -> None:
        seq = 0
        async for message in ws:
            packet = json.loads(message)
            if packet["type"] == "search_docs":
                seq += 1
                await ws.send(_frame(packet["run_id"], "1", seq, PacketType.EVENTS))

    async def agent(handler: Any, port: int) -> None:
        async with serve(handler, "127.0.0.1", port, max_size=None):
            await stop.wait()

    servers = [asyncio.create_task(agent(sender, p0)), asyncio.create_task(agent(receiver, p1))]
    try:
        task = Task("overhead", "x" * 400, "q?", "a", workdir)
        await MeshNetwork(settings, task, workdir / "relay", reporter=lambda _: None).run()
    finally:
        stop.set()
        await asyncio.gather(*servers)
    return samples


def through_redis(frames: int) -> list[float] | str:
    """Round trips over Redis pub/sub (two channels), with a redis-server started here."""
    binary = shutil.which("redis-server")
    if binary is None:
        return "skipped: redis-server is not installed (apt-get install redis-server)"
    try:
        import redis
    except ImportError:
        return "skipped: the redis Python package is not installed"
    port = _port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        client = redis.Redis(port=port)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    return "skipped: redis-server did not start"
                time.sleep(0.05)  # waiting for a child process to listen
        blob = _frame("bench", "0", 1, PacketType.EVENTS)
        to_peer, to_me = client.pubsub(), client.pubsub()
        to_peer.subscribe("to-peer")
        to_me.subscribe("to-me")
        for ps in (to_peer, to_me):
            ps.get_message(timeout=1)  # subscription confirmation
        peer = redis.Redis(port=port)
        samples = []
        for _ in range(frames):
            t0 = time.perf_counter()
            client.publish("to-peer", blob)
            msg = to_peer.get_message(timeout=5)
            while msg is None or msg["type"] != "message":
                msg = to_peer.get_message(timeout=5)
            peer.publish("to-me", msg["data"])
            back = to_me.get_message(timeout=5)
            while back is None or back["type"] != "message":
                back = to_me.get_message(timeout=5)
            samples.append(time.perf_counter() - t0)
        return samples
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def model_speed(model_path: Path, host: str, model: str, tokens: int, repeat: int) -> dict[str, Any]:
    """Generated tokens/s: raw llama-cpp-python vs our server through the ollama client."""
    import llama_cpp
    import ollama

    prompt = "Write a long story about a lighthouse keeper and the storm that changed her village."
    raw = llama_cpp.Llama(model_path=str(model_path), n_ctx=2048, n_threads=2, verbose=False)
    prompt_tokens = raw.tokenize(prompt.encode(), add_bos=True)
    raw_tps, server_tps, server_wall_tps = [], [], []
    client = ollama.Client(host=host)
    for _ in range(repeat):
        raw.reset()
        out = 0
        t0 = time.perf_counter()
        for tok in raw.generate(prompt_tokens, temp=0.0, top_k=40, top_p=0.9, repeat_penalty=1.1, reset=True):
            if out == 0:
                t1 = time.perf_counter()  # first token: prompt evaluated
            out += 1
            if llama_cpp.llama_vocab_is_eog(raw._model.vocab, tok) or out >= tokens:
                break
        raw_tps.append((out - 1) / (time.perf_counter() - t1))
        t0 = time.perf_counter()
        r = client.generate(
            model=model, prompt=prompt, raw=True, options={"temperature": 0, "num_predict": tokens}
        )
        wall = time.perf_counter() - t0
        count, duration = r.eval_count or 0, (r.eval_duration or 1) / 1e9
        server_tps.append(count / duration)
        server_wall_tps.append(count / wall)
    return {
        "tokens": tokens,
        "repeat": repeat,
        "raw_llama_cpp_tok_s": round(statistics.median(raw_tps), 1),
        "server_tok_s": round(statistics.median(server_tps), 1),
        "server_tok_s_incl_http_and_prompt": round(statistics.median(server_wall_tps), 1),
        "server_vs_raw": round(statistics.median(server_tps) / statistics.median(raw_tps), 3),
    }


def run_overhead(
    frames: int, out: Path, host: str, model: str, model_path: Path, tokens: int, repeat: int
) -> dict[str, Any]:
    """Run every measurement, write ``overhead.json`` and ``overhead.md``; returns the results."""
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"frame_bytes": len(_frame("bench", "0", 1, PacketType.EVENTS))}
    with console.status("relay: plain loopback WebSocket ..."):
        plain = _stats(asyncio.run(plain_websocket(frames)))
    with console.status("relay: through MeshNetwork ..."), tempfile.TemporaryDirectory() as tmp:
        relay = _stats(asyncio.run(through_relay(frames, Path(tmp))))
    with console.status("relay: Redis pub/sub ..."):
        redis_samples = through_redis(frames)
    rows = {"plain_websocket": plain, "mesh_relay": relay}
    if isinstance(redis_samples, str):
        results["redis_pubsub"] = redis_samples
    else:
        rows["redis_pubsub"] = _stats(redis_samples)
    results["round_trip"] = rows
    # The relay path has two more hops than the plain socket: half the difference is its cost per frame.
    results["relay_cost_per_frame_us"] = round((relay["median_us"] - plain["median_us"]) / 2, 1)
    results["relay_vs_plain"] = round(relay["median_us"] / plain["median_us"], 2)
    with console.status("model: raw llama-cpp-python vs the server ..."):
        results["model"] = model_speed(model_path, host, model, tokens, repeat)
    (out / "overhead.json").write_text(json.dumps(results, indent=2))
    lines = [
        "# gaiamesh overhead benchmark",
        "",
        f"Round trip of one {results['frame_bytes']}-byte packet, {frames} frames each, measured in one run.",
        "",
        "| path | median µs | p90 µs | mean µs |",
        "|---|---|---|---|",
    ]
    for name, s in rows.items():
        lines.append(f"| {name} | {s['median_us']} | {s['p90_us']} | {s['mean_us']} |")
    if isinstance(redis_samples, str):
        lines.append(f"| redis_pubsub | {redis_samples} | | |")
    m = results["model"]
    lines += [
        "",
        f"Relay cost per relayed frame (half the extra round trip): {results['relay_cost_per_frame_us']} µs; "
        f"relay round trip / plain round trip: {results['relay_vs_plain']}.",
        "",
        "| model generation | tokens/s |",
        "|---|---|",
        f"| raw llama-cpp-python | {m['raw_llama_cpp_tok_s']} |",
        f"| gaiamesh model server (eval only) | {m['server_tok_s']} |",
        f"| gaiamesh model server (wall, incl. HTTP and prompt) | {m['server_tok_s_incl_http_and_prompt']} |",
        "",
        f"Server / raw: {m['server_vs_raw']}.",
    ]
    (out / "overhead.md").write_text("\n".join(lines) + "\n")
    console.print("\n".join(lines))
    return results
