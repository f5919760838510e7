"""``gaiamesh bench-overhead``: what the harness itself costs, measured side by side in one run.

1. Relaying a frame (:mod:`.paths`, through the relays of :mod:`.relays`). Four paths, each
   carrying the same realistic packet:
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
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from ...mesh.frames import PacketType
from .. import plots
from .paths import fanout_redis, fanout_relay, plain_websocket, through_redis, through_relay
from .relays import RELAYS, packet_bytes

console = Console()


def _stats(samples: list[float], per: int = 1) -> dict[str, float]:
    """Median, p90 and mean in µs of ``samples`` (seconds), each divided by ``per``."""
    ordered = sorted(x / per for x in samples)
    return {
        "n": len(samples),
        "median_us": round(statistics.median(ordered) * 1e6, 1),
        "p90_us": round(ordered[int(0.9 * (len(ordered) - 1))] * 1e6, 1),
        "mean_us": round(statistics.fmean(ordered) * 1e6, 1),
    }


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
        "frame_bytes": len(packet_bytes("bench", "0", PacketType.SEARCH_DOCS)),
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
    plt = plots.pyplot()

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
    plots.save(fig, path)


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
