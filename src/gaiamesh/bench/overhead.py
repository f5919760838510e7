"""``gaiamesh bench-overhead``: what the harness itself costs, measured side by side in one run.

1. Relaying a frame. Four paths, each carrying the same realistic packet:
   - ``plain``: one loopback WebSocket, the peer echoes (no relay at all);
   - ``floor``: a byte-forwarding relay on the same stack (websockets, asyncio, one process):
     receive a frame, forward it unchanged to the other agents, nothing else;
   - ``mesh``: our relay (``MeshNetwork``): decode, validate, route, count, frame log;
   - ``redis``: Redis pub/sub (a ``redis-server`` the benchmark starts on a free port).
   Per-frame latency is half a round trip agent -> relay -> agent -> relay -> agent (median,
   p90). Fan-out throughput is the frames per second one publisher gets delivered to every one
   of 4 and of 16 subscribers. Relays run in their own process, as ``redis-server`` does.
2. Model server speed: generated tokens/s of our Ollama-compatible server (through the official
   ``ollama`` client) against raw ``llama-cpp-python`` on the same model, prompt and settings.

Results go to ``overhead.json`` and ``overhead.md``, and ``overhead.png`` draws them; ratios
measured in the same run are what to compare across machines.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import ServerConnection, serve

from ..mesh.frames import FINAL_ANSWER_TAG, PacketType, make_packet
from ..mesh.relay import MeshNetwork, write_frames
from ..mesh.routing import RoutingMode
from ..runner import free_port
from ..settings import Settings
from ..tasks import Task

console = Console()
TEXT = "The farm has an installed capacity of 148 megawatts. " * 20
PAYLOADS: dict[PacketType, dict[str, Any]] = {
    PacketType.SEARCH_DOCS: {"passages": [{"chunk": 0, "score": 1.0, "text": TEXT}], "n_chunks": 1},
    PacketType.EVENTS: {"facts": [{"text": TEXT, "score": 1.0}]},
    PacketType.DATA_EVENT: {
        "answer": "148 megawatts", "method": "reading", "question": "q?", "reading": "148 megawatts",
        "candidates": [], "facts_used": 1, "triples_seen": 0,
    },
}  # fmt: skip
RELAYS = ("floor", "mesh")
FLOOR_START = b"start"
Handler = Callable[[ServerConnection], Awaitable[None]]


def _stats(samples: list[float], per: int = 1) -> dict[str, float]:
    """Median, p90 and mean in µs of ``samples`` (seconds), each divided by ``per``."""
    ordered = sorted(x / per for x in samples)
    return {
        "n": len(samples),
        "median_us": round(statistics.median(ordered) * 1e6, 1),
        "p90_us": round(ordered[int(0.9 * (len(ordered) - 1))] * 1e6, 1),
        "mean_us": round(statistics.fmean(ordered) * 1e6, 1),
    }


def _frame(run_id: str, src: str, ptype: PacketType, seq: int = 1) -> bytes:
    tag = FINAL_ANSWER_TAG if ptype is PacketType.DATA_EVENT else None
    packet = make_packet(ptype, PAYLOADS[ptype], run_id=run_id, src=src, seq=seq, tag=tag)
    return json.dumps(packet.to_dict()).encode()


def _run_id(first: str | bytes) -> str:
    """The run id from the relay's first message: ``doc_init`` (mesh) or the floor's start."""
    if first in (FLOOR_START, FLOOR_START.decode()):
        return "bench"
    return str(json.loads(first)["run_id"])


# --- the relays, each in a process of its own ---------------------------------------------
async def floor_relay(urls: list[str]) -> None:
    """The floor: receive a frame, forward it unchanged to every other agent, nothing else.

    It moves bytes exactly as ``MeshNetwork`` does (frames read in one pass of the event loop
    leave in one socket write per agent), so the difference between the two is the relay's
    own work: decoding, validation, routing, counting and the frame log."""
    conns: list[ClientConnection] = [await connect(u, compression=None, max_size=None) for u in urls]
    for ws in conns:
        write_frames(ws, [FLOOR_START])
    pending: dict[ClientConnection, list[bytes]] = {}

    def flush() -> None:
        batch = dict(pending)
        pending.clear()
        for ws, blobs in batch.items():
            write_frames(ws, blobs)

    async def pump(ws: ClientConnection) -> None:
        others = [c for c in conns if c is not ws]
        async for message in ws:
            if not pending:
                asyncio.get_running_loop().call_soon(flush)
            for other in others:
                pending.setdefault(other, []).append(message)  # type: ignore[arg-type]

    async with asyncio.TaskGroup() as tasks:
        for ws in conns:
            tasks.create_task(pump(ws))


async def mesh_relay(agents: str, workdir: Path) -> None:
    """Our relay, as deployed: validation, counting and the frame log on; JSON, broadcast."""
    settings = Settings(
        agents=agents, routing=RoutingMode.BROADCAST, protocol="json", workspace_root=workdir / "ws",
        run_timeout=600, connect_timeout=30, max_frame_bytes=1 << 20,
    )  # fmt: skip
    task = Task("overhead", "x" * 400, "q?", "a", workdir)
    await MeshNetwork(settings, task, workdir / "relay", quiet=True).run()


def _main(argv: list[str]) -> None:
    """``python -m gaiamesh.bench.overhead floor|mesh AGENTS WORKDIR``: one relay process."""
    kind, agents, workdir = argv
    if kind == "floor":
        urls = [f"ws://{a.split('@', 1)[1]}/ws" for a in agents.split(",")]
        asyncio.run(floor_relay(urls))
    else:
        asyncio.run(mesh_relay(agents, Path(workdir)))


@asynccontextmanager
async def _agents(handlers: list[Handler], relay: str, workdir: Path) -> Any:
    """Serve ``handlers`` as agents 0..n-1 on free ports and start the ``relay`` process on them."""
    ports = [free_port() for _ in handlers]
    async with AsyncExitStack() as stack:
        for handler, port in zip(handlers, ports, strict=True):
            await stack.enter_async_context(
                serve(handler, "127.0.0.1", port, compression=None, max_size=None)
            )
        agents = ",".join(f"{i}=extract@127.0.0.1:{p}" for i, p in enumerate(ports))
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "gaiamesh.bench.overhead", relay, agents, str(workdir),
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            yield proc
        finally:
            await stack.aclose()  # closing the agents ends the floor; the mesh ends on its own
            await proc.wait()


# --- per-frame latency --------------------------------------------------------------------
async def plain_websocket(frames: int) -> list[float]:
    """Round trips over one loopback WebSocket: send a packet, the peer answers with one."""
    blob = _frame("bench", "0", PacketType.SEARCH_DOCS)
    reply = _frame("bench", "1", PacketType.EVENTS)

    async def echo(ws: ServerConnection) -> None:
        async for _ in ws:
            await ws.send(reply)

    port = free_port()
    samples = []
    async with (
        serve(echo, "127.0.0.1", port, compression=None),
        connect(f"ws://127.0.0.1:{port}", compression=None) as ws,
    ):
        for _ in range(frames):
            t0 = time.perf_counter()
            await ws.send(blob)
            await ws.recv()
            samples.append(time.perf_counter() - t0)
    return samples


async def through_relay(relay: str, frames: int, workdir: Path) -> list[float]:
    """Round trips agent 0 -> relay -> agent 1 -> relay -> agent 0 through ``relay``."""
    samples: list[float] = []
    done = asyncio.Event()

    async def sender(ws: ServerConnection) -> None:
        run_id = _run_id(await ws.recv())
        blob = _frame(run_id, "0", PacketType.SEARCH_DOCS)
        for _ in range(frames):
            t0 = time.perf_counter()
            await ws.send(blob)
            await ws.recv()  # agent 1's answer, relayed back
            samples.append(time.perf_counter() - t0)
        if relay == "mesh":
            await ws.send(_frame(run_id, "0", PacketType.DATA_EVENT, frames + 1))
        done.set()
        await ws.wait_closed()

    async def echoer(ws: ServerConnection) -> None:
        reply = _frame(_run_id(await ws.recv()), "1", PacketType.EVENTS)
        async for message in ws:
            if b'"search_docs"' in message if isinstance(message, bytes) else '"search_docs"' in message:
                await ws.send(reply)

    async with _agents([sender, echoer], relay, workdir):
        await done.wait()
    return samples


def through_redis(frames: int) -> list[float] | str:
    """Round trips over Redis pub/sub (two channels), with a redis-server started here."""
    server = _redis_server()
    if isinstance(server, str):
        return server
    proc, port = server
    try:
        import redis

        client, peer = redis.Redis(port=port), redis.Redis(port=port)
        blob = _frame("bench", "0", PacketType.SEARCH_DOCS)
        reply = _frame("bench", "1", PacketType.EVENTS)
        to_peer, to_me = client.pubsub(), client.pubsub()
        to_peer.subscribe("to-peer")
        to_me.subscribe("to-me")
        for ps in (to_peer, to_me):
            ps.get_message(timeout=1)  # subscription confirmation
        samples = []
        for _ in range(frames):
            t0 = time.perf_counter()
            client.publish("to-peer", blob)
            msg = to_peer.get_message(timeout=5)
            while msg is None or msg["type"] != "message":
                msg = to_peer.get_message(timeout=5)
            peer.publish("to-me", reply)
            back = to_me.get_message(timeout=5)
            while back is None or back["type"] != "message":
                back = to_me.get_message(timeout=5)
            samples.append(time.perf_counter() - t0)
        return samples
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _redis_server() -> tuple[subprocess.Popen[bytes], int] | str:
    """A private redis-server on a free port, or why there is none."""
    binary = shutil.which("redis-server")
    if binary is None:
        return "skipped: redis-server is not installed (apt-get install redis-server)"
    try:
        import redis
    except ImportError:
        return "skipped: the redis Python package is not installed"
    port = free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(port=port)
    deadline = time.monotonic() + 10
    while True:
        try:
            client.ping()
            return proc, port
        except redis.ConnectionError:
            if time.monotonic() > deadline:
                proc.terminate()
                return "skipped: redis-server did not start"
            time.sleep(0.05)  # waiting for a child process to listen


# --- fan-out throughput -------------------------------------------------------------------
async def fanout_relay(relay: str, subscribers: int, frames: int, workdir: Path) -> float:
    """Frames per second from one publisher delivered to every one of ``subscribers`` agents."""
    got = [0] * subscribers
    all_in = asyncio.Event()
    stamps: dict[str, float] = {}

    async def publisher(ws: ServerConnection) -> None:
        run_id = _run_id(await ws.recv())
        blob = _frame(run_id, "0", PacketType.SEARCH_DOCS)
        stamps["first_sent"] = time.perf_counter()
        for _ in range(frames):
            await ws.send(blob)  # waits only when the relay stops reading (backpressure)
        await all_in.wait()
        if relay == "mesh":
            await ws.send(_frame(run_id, "0", PacketType.DATA_EVENT, frames + 1))
        await ws.wait_closed()

    def subscriber(k: int) -> Handler:
        async def handler(ws: ServerConnection) -> None:
            await ws.recv()  # the start
            async for _ in ws:
                got[k] += 1
                if got[k] == frames and all(n >= frames for n in got):
                    stamps["last_received"] = time.perf_counter()
                    all_in.set()

        return handler

    async with _agents([publisher, *(subscriber(k) for k in range(subscribers))], relay, workdir):
        await all_in.wait()
    return frames / (stamps["last_received"] - stamps["first_sent"])


async def fanout_redis(subscribers: int, frames: int) -> float | str:
    """The same fan-out over Redis pub/sub: one publisher (pipelined), ``subscribers`` clients."""
    server = _redis_server()
    if isinstance(server, str):
        return server
    proc, port = server
    import redis.asyncio as aredis

    try:
        blob = _frame("bench", "0", PacketType.SEARCH_DOCS)
        clients = [aredis.Redis(port=port) for _ in range(subscribers)]
        subs = [c.pubsub() for c in clients]
        for ps in subs:
            await ps.subscribe("fan")
        got = [0] * subscribers
        all_in = asyncio.Event()

        async def consume(k: int, ps: Any) -> None:
            async for message in ps.listen():
                if message["type"] == "message":
                    got[k] += 1
                    if got[k] == frames:
                        if all(n >= frames for n in got):
                            all_in.set()
                        return

        async with asyncio.TaskGroup() as tasks:
            for k, ps in enumerate(subs):
                tasks.create_task(consume(k, ps))
            pub = aredis.Redis(port=port)
            t0 = time.perf_counter()
            for start in range(0, frames, 100):  # pipelined: the publisher never waits a round trip
                pipe = pub.pipeline(transaction=False)
                for _ in range(min(100, frames - start)):
                    pipe.publish("fan", blob)
                await pipe.execute()
            await all_in.wait()
            elapsed = time.perf_counter() - t0
        for c in [pub, *clients]:
            await c.aclose()
        return frames / elapsed
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


def measure_relays(frames: int, fanout_frames: int, fanouts: list[int], rounds: int) -> dict[str, Any]:
    """Every relay path, side by side: ``rounds`` rounds, each measuring every path once in
    turn. Figures are medians over rounds; ratios are taken within a round, then the median."""
    lat_rounds: list[dict[str, Any]] = []
    fan_rounds: list[dict[str, dict[str, float | str]]] = []
    with tempfile.TemporaryDirectory() as tmp, console.status("") as status:
        for k in range(rounds):
            tag = f"round {k + 1}/{rounds}"
            lat: dict[str, Any] = {}
            status.update(f"{tag} latency: plain loopback WebSocket ...")
            lat["plain"] = _stats(asyncio.run(plain_websocket(frames)), per=2)
            for relay in RELAYS:
                status.update(f"{tag} latency: through the {relay} relay ...")
                work = Path(tmp) / f"{relay}-{k}"
                lat[relay] = _stats(asyncio.run(through_relay(relay, frames, work)), per=2)
            status.update(f"{tag} latency: Redis pub/sub ...")
            samples = through_redis(frames)
            lat["redis"] = samples if isinstance(samples, str) else _stats(samples, per=2)
            lat_rounds.append(lat)
            fan: dict[str, dict[str, float | str]] = {}
            for n in fanouts:
                for relay in RELAYS:
                    status.update(f"{tag} fan-out to {n}: {relay} relay ...")
                    work = Path(tmp) / f"fan-{relay}-{n}-{k}"
                    fan.setdefault(relay, {})[str(n)] = asyncio.run(fanout_relay(relay, n, fanout_frames, work))
                status.update(f"{tag} fan-out to {n}: Redis pub/sub ...")
                fan.setdefault("redis", {})[str(n)] = asyncio.run(fanout_redis(n, fanout_frames))
            fan_rounds.append(fan)
    return summarize_rounds(lat_rounds, fan_rounds, frames)


def _median(values: list[Any]) -> Any:
    numbers = [v for v in values if not isinstance(v, str)]
    return statistics.median(numbers) if numbers else values[0]


def summarize_rounds(
    lat_rounds: list[dict[str, Any]], fan_rounds: list[dict[str, dict[str, float | str]]], frames: int
) -> dict[str, Any]:
    """Medians over rounds, and paired ratios (each round's ratio, then their median)."""
    first_lat, first_fan = lat_rounds[0], fan_rounds[0]
    latency: dict[str, Any] = {}
    for path, value in first_lat.items():
        if isinstance(value, str):
            latency[path] = value
            continue
        latency[path] = {
            key: round(_median([r[path][key] for r in lat_rounds]), 1) for key in ("median_us", "p90_us", "mean_us")
        } | {"n": frames, "rounds": len(lat_rounds)}
    fan = {
        path: {n: (v if isinstance(v := _median([r[path][n] for r in fan_rounds]), str) else round(v, 1))
               for n in rates}
        for path, rates in first_fan.items()
    }  # fmt: skip

    def ratio(values: list[tuple[Any, Any]]) -> float | None:
        pairs = [a / b for a, b in values if not isinstance(a, str) and not isinstance(b, str) and b]
        return round(statistics.median(pairs), 3) if pairs else None

    results: dict[str, Any] = {
        "frame_bytes": len(_frame("bench", "0", PacketType.SEARCH_DOCS)),
        "rounds": len(lat_rounds),
        "latency_per_frame": latency,
        "fanout_frames_per_s": fan,
        "mesh_vs_floor_latency": ratio([(r["mesh"]["median_us"], r["floor"]["median_us"]) for r in lat_rounds]),
        "mesh_vs_floor_latency_p90": ratio([(r["mesh"]["p90_us"], r["floor"]["p90_us"]) for r in lat_rounds]),
        # what validation, routing, counting and the frame log add to one frame
        "mesh_cost_per_frame_us": round(
            statistics.median(r["mesh"]["median_us"] - r["floor"]["median_us"] for r in lat_rounds), 1
        ),
    }
    for n in first_fan["mesh"]:
        results[f"mesh_vs_floor_fanout_{n}"] = ratio([(r["mesh"][n], r["floor"][n]) for r in fan_rounds])
        results[f"mesh_vs_redis_fanout_{n}"] = ratio([(r["mesh"][n], r["redis"][n]) for r in fan_rounds])
    return results


def relay_markdown(r: dict[str, Any], frames: int, fanout_frames: int) -> list[str]:
    lat, fan = r["latency_per_frame"], r["fanout_frames_per_s"]
    names = {"plain": "plain loopback WebSocket (no relay)", "floor": "floor: byte-forwarding relay",
             "mesh": "gaiamesh relay (validate, count, frame log)", "redis": "Redis pub/sub"}  # fmt: skip
    lines = [
        f"Per-frame latency: half a round trip of one {r['frame_bytes']}-byte packet, {frames} round trips "
        "per path and round.",
        "",
        "| path | median µs | p90 µs | mean µs |",
        "|---|---|---|---|",
    ]
    for key, s in lat.items():
        lines.append(
            f"| {names[key]} | {s} | | |"
            if isinstance(s, str)
            else f"| {names[key]} | {s['median_us']} | {s['p90_us']} | {s['mean_us']} |"
        )
    counts = list(next(iter(fan.values())))
    lines += [
        "",
        f"Fan-out: frames per second delivered to every subscriber ({fanout_frames} frames per path and round).",
        "",
        "| path | " + " | ".join(f"{n} subscribers" for n in counts) + " |",
        "|---|" + "---|" * len(counts),
    ]
    for key, rates in fan.items():
        lines.append(f"| {names[key]} | " + " | ".join(f"{v:,.0f}" if not isinstance(v, str) else v
                                                       for v in rates.values()) + " |")  # fmt: skip
    lines += ["", f"Medians over {r['rounds']} rounds; ratios are paired within a round.", "",
              f"- gaiamesh / floor, per-frame latency: {r['mesh_vs_floor_latency']} (median), "
              f"{r['mesh_vs_floor_latency_p90']} (p90); the relay's own work: {r['mesh_cost_per_frame_us']} µs "
              "per frame."]  # fmt: skip
    for n in counts:
        lines.append(
            f"- fan-out to {n}: gaiamesh / floor {r[f'mesh_vs_floor_fanout_{n}']}, "
            f"gaiamesh / Redis {r[f'mesh_vs_redis_fanout_{n}']}."
        )
    return lines


def plot(results: dict[str, Any], path: Path) -> None:
    """Two panels: per-frame latency (median and p90) and fan-out throughput, per path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lat = {k: v for k, v in results["latency_per_frame"].items() if not isinstance(v, str)}
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    names = list(lat)
    xs = range(len(names))
    a.bar([x - 0.2 for x in xs], [lat[n]["median_us"] for n in names], 0.4, label="median", color="#4C72B0")
    a.bar([x + 0.2 for x in xs], [lat[n]["p90_us"] for n in names], 0.4, label="p90", color="#DD8452")
    a.set_xticks(list(xs), names)
    a.set_title("per-frame latency, µs (lower is better)")
    a.legend()
    fan = {k: v for k, v in results["fanout_frames_per_s"].items()}
    counts = list(next(iter(fan.values())))
    width = 0.8 / len(fan)
    for i, (name, rates) in enumerate(fan.items()):
        b.bar([c + i * width for c in range(len(counts))],
              [0 if isinstance(rates[n], str) else rates[n] for n in counts], width, label=name)  # fmt: skip
    b.set_xticks([c + width * (len(fan) - 1) / 2 for c in range(len(counts))], [f"{n} subscribers" for n in counts])
    b.set_title("fan-out, frames/s to every subscriber (higher is better)")
    b.legend()
    fig.suptitle("Gaia Mesh: the cost of relaying, against its floor")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run_overhead(
    out: Path,
    frames: int,
    fanout_frames: int,
    fanouts: list[int],
    rounds: int,
    model: tuple[str, str, Path, int, int] | None,
) -> dict[str, Any]:
    """Run every measurement, write ``overhead.json``, ``overhead.md`` and ``overhead.png``.

    ``model`` is ``(host, name, gguf path, tokens, repeat)`` for the model server comparison,
    or None to measure the relays only.
    """
    out.mkdir(parents=True, exist_ok=True)
    results = measure_relays(frames, fanout_frames, fanouts, rounds)
    lines = ["# gaiamesh overhead benchmark", "", *relay_markdown(results, frames, fanout_frames)]
    if model is not None:
        host, name, path, tokens, repeat = model
        with console.status("model: raw llama-cpp-python vs the server ..."):
            m = results["model"] = model_speed(path, host, name, tokens, repeat)
        lines += [
            "",
            "| model generation | tokens/s |",
            "|---|---|",
            f"| raw llama-cpp-python | {m['raw_llama_cpp_tok_s']} |",
            f"| gaiamesh model server (eval only) | {m['server_tok_s']} |",
            f"| gaiamesh model server (wall, incl. HTTP and prompt) | {m['server_tok_s_incl_http_and_prompt']} |",
            "",
            f"Server / raw: {m['server_vs_raw']}.",
        ]
    (out / "overhead.json").write_text(json.dumps(results, indent=2))
    (out / "overhead.md").write_text("\n".join(lines) + "\n")
    plot(results, out / "overhead.png")
    console.print("\n".join(lines))
    return results


if __name__ == "__main__":
    _main(sys.argv[1:])
