"""The attack bench's pure parts (bench/attacks/judge.py) by plain calls on every protocol's real
frames, the attacker on the wire (bench/attacks/wiretap.py) between a real WebSocket client and server,
and a rogue at an agent's address before a real relay and real agents (fast fake model)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve

from gaiamesh.agents.teams import agent_specs, lineup
from gaiamesh.bench.attacks.cells import Cells
from gaiamesh.bench.attacks.judge import Line, downgrade, flip, judge_wire, packet_in, read_by_tap, truncate
from gaiamesh.bench.attacks.run import judge_handshake, rogue_cell
from gaiamesh.bench.attacks.wiretap import Seen, Splice, Tamper, Way, intercept
from gaiamesh.deploy.local import free_port
from gaiamesh.evaluation.finish import run_and_finish
from gaiamesh.mesh.frames import PacketType, make_packet
from gaiamesh.mesh.protocols import available, canonical_json, generate_keys, get_adapter
from gaiamesh.mesh.relay import MeshNetwork
from gaiamesh.tasks import load_task

from ....conftest import TASKS, free_port_block
from ...mesh.test_relay import TOOLS, mesh, settings_for

TEXT = "The farm's output is 148 megawatts."


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate_keys(tmp_path_factory.mktemp("keys"), ["network", "1"])


def _packet() -> dict:
    return make_packet(PacketType.EVENTS, {"facts": [{"text": TEXT, "score": 1.0}]}, run_id="r1", src="1", seq=1).to_dict()


@pytest.mark.parametrize("protocol", available())
def test_the_tap_reads_every_protocols_frames_and_finds_the_packet(protocol: str, keys: Path) -> None:
    blob = get_adapter(protocol, "1", keys).encode(_packet())
    assert TEXT in read_by_tap([blob])  # no protocol here hides its content from a tap
    assert packet_in(blob) == _packet()
    bare = downgrade(blob)
    assert bare is not None and json.loads(bare) == _packet()


@pytest.mark.parametrize("protocol", [p for p in available() if p != "compressed"])  # zlib hides the text
def test_flip_alters_what_the_agent_said(protocol: str, keys: Path) -> None:
    blob = get_adapter(protocol, "1", keys).encode(_packet())
    altered = packet_in(flip(blob))
    assert altered is not None and altered["payload"]["facts"][0]["text"] != TEXT
    assert altered["payload"]["facts"][0]["text"].lower() == TEXT.lower()


def test_the_tap_reads_a_signed_frame_whose_header_holds_a_brace(keys: Path) -> None:
    signer = get_adapter("signed", "1", keys)
    body = canonical_json(_packet())
    blob = next(b for b in (signer.encode(_packet()) for _ in range(2000)) if b"{" in b[: -len(body)])
    assert packet_in(blob) == _packet() and downgrade(blob) == body


def test_flip_changes_one_bit_and_keeps_json_well_formed_truncate_halves() -> None:
    blob = canonical_json(_packet())
    flipped = flip(blob)
    assert len(flipped) == len(blob) and sum(bin(a ^ b).count("1") for a, b in zip(blob, flipped, strict=True)) == 1
    json.loads(flipped)  # still JSON: the relay has to judge the content, not the syntax
    assert truncate(blob) == blob[: len(blob) // 2]


def test_the_judge_reads_the_relays_log() -> None:
    sent = b"altered"
    rejected = [Line("1", "rejected", sent, "signed: bad signature")]
    assert judge_wire("flip", sent, "1", rejected, "timeout") == ("blocked", "the relay refused it: signed: bad signature")
    outcome, evidence = judge_wire("flip", sent, "1", [Line("1", "accepted", sent, None)], "ok")
    assert outcome == "succeeded" and "ended ok" in evidence
    copies = [Line("1", "accepted", sent, None), Line("1", "rejected", sent, "signed: replayed")]
    assert judge_wire("replay", sent, "1", copies, "ok")[0] == "blocked"
    assert judge_wire("replay", sent, "1", copies[:1] * 2, "ok")[0] == "succeeded"
    assert judge_wire("flip", sent, "1", [Line("2", "accepted", sent, None)], "ok")[0] == "blocked"  # another agent's
    assert judge_wire("flip", None, "1", [], "ok")[0] == "n/a"
    assert judge_handshake(b"HTTP/1.1 101 Switching Protocols\r\n\r\n")[0] == "succeeded"
    assert judge_handshake(b"HTTP/1.1 403 Forbidden\r\n\r\nreplayed\n") == ("blocked", "the agent answered 'HTTP/1.1 403 Forbidden': replayed")


async def _through(tamper: Tamper | None, upward: list[bytes], downward: list[bytes]) -> tuple[list[bytes], list[bytes], Seen]:
    """A client sends ``downward``, the server answers ``upward`` once it has them all, through the attacker."""
    got_down: list[bytes] = []
    server_port, port = free_port(), free_port()

    async def handler(ws: ServerConnection) -> None:
        while len(got_down) < len(downward):
            got_down.append(bytes(await ws.recv()))  # type: ignore[arg-type]
        for blob in upward:
            await ws.send(blob)
        await ws.wait_closed()

    seen, ready, stop = Seen(), asyncio.Event(), asyncio.Event()
    async with serve(handler, "127.0.0.1", server_port, compression=None):  # as the mesh: no permessage-deflate
        proxy = asyncio.create_task(intercept(port, server_port, lambda: Splice(tamper, seen), ready, stop))
        await ready.wait()
        got_up: list[bytes] = []
        async with connect(f"ws://127.0.0.1:{port}", compression=None) as ws:
            for blob in downward:
                await ws.send(blob)
            expected = len(upward) + (1 if tamper and tamper.kind == "copy" else 0)
            while len(got_up) < expected:
                got_up.append(bytes(await asyncio.wait_for(ws.recv(), 5)))  # type: ignore[arg-type]
        stop.set()
        await proxy
    return got_up, got_down, seen


async def test_the_attacker_passes_a_clean_link_and_records_it() -> None:
    up, down, seen = await _through(None, [b"a1", b"a2"], [b"r1"])
    assert (up, down) == ([b"a1", b"a2"], [b"r1"])
    assert seen.frames == [(Way.DOWN, b"r1"), (Way.UP, b"a1"), (Way.UP, b"a2")]
    assert seen.request.startswith(b"GET / HTTP/1.1") and seen.response.startswith(b"HTTP/1.1 101")


async def test_the_attacker_alters_copies_holds_and_swaps_real_frames() -> None:
    alter = Tamper("alter", alter=lambda b: b.upper())
    up, _, _ = await _through(alter, [b"answer", b"next"], [b"r"])
    assert up == [b"ANSWER", b"next"] and alter.sent == b"ANSWER"
    up, _, _ = await _through(Tamper("copy"), [b"answer"], [b"r"])
    assert up == [b"answer", b"answer"]
    hold = Tamper("hold", hold_s=0.3)
    started = asyncio.get_running_loop().time()
    up, _, _ = await _through(hold, [b"answer"], [b"r"])
    assert up == [b"answer"] and asyncio.get_running_loop().time() - started >= 0.3
    _, down, _ = await _through(Tamper("swap", way=Way.DOWN), [b"ok"], [b"first", b"second"])
    assert down == [b"second", b"first"]


def _record(kind: int, body: bytes) -> bytes:
    return bytes([kind, 3, 3]) + len(body).to_bytes(2, "big") + body


def test_under_tls_the_attacker_goes_by_turns_and_acts_on_one_record_past_the_handshake() -> None:
    from gaiamesh.bench.attacks.wiretap import TlsSplice

    captured: list[bytes] = []
    seen = Seen(on_handshake=captured.append)
    s = TlsSplice(Tamper("alter", way=Way.UP), seen)
    hello, finish, upgrade = _record(22, b"h" * 9), _record(23, b"f" * 9), _record(23, b"u" * 9)
    assert [x.data for x in s.feed(Way.DOWN, hello[:3])] == []  # a record's bytes still on their way
    assert [x.data for x in s.feed(Way.DOWN, hello[3:])] == [hello]
    handshake = _record(22, b"s" * 7) + _record(23, b"e" * 7)
    assert b"".join(x.data for x in s.feed(Way.UP, handshake)) == handshake  # turn 1: passes as it is
    s.feed(Way.DOWN, finish + upgrade)
    tickets = _record(23, b"t" * 11)
    assert b"".join(x.data for x in s.feed(Way.UP, tickets)) == tickets  # turn 2 passes too
    assert captured == [] and not s.tamper.fired  # type: ignore[union-attr]
    s.feed(Way.DOWN, _record(23, b"d" * 40))  # the relay's frames: the handshake is over
    assert captured == [hello + finish + upgrade] and seen.request == captured[0]
    answer = _record(23, b"a" * 20)
    sent = s.feed(Way.UP, answer + _record(23, b"b" * 4))
    assert sent[0].data != answer and len(sent[0].data) == len(answer)  # one byte of ciphertext flipped
    assert sum(x != y for x, y in zip(sent[0].data, answer, strict=True)) == 1
    assert sent[1].data == _record(23, b"b" * 4)  # once only
    assert len(seen.frames) == 9 and not any(b"a" * 20 in read_by_tap([p]).encode() for _, p in seen.frames)


def test_under_tls_a_copy_and_a_swap_move_whole_records() -> None:
    from gaiamesh.bench.attacks.wiretap import TlsSplice

    for kind, way in (("copy", Way.UP), ("swap", Way.DOWN)):
        s = TlsSplice(Tamper(kind, way=way), Seen())
        for w in (Way.DOWN, Way.UP, Way.DOWN, Way.UP):  # two turns each way: the handshake
            s.feed(w, _record(23, b"x"))
        one, two = _record(23, b"1" * 5), _record(23, b"2" * 5)
        got = [x.data for x in s.feed(Way.DOWN, one) + s.feed(Way.UP, one) + s.feed(way, two)]
        if kind == "copy":
            assert got == [one, one, one, two]
        else:
            assert got == [one, two, one]  # the relay's first record held until its next had gone


def test_the_judge_of_a_tls_record_reads_the_connections_the_relay_lost() -> None:
    from gaiamesh.bench.attacks.judge import judge_tls

    outcome, evidence = judge_tls("flip", True, [812.0], [], True, "ok")
    assert outcome == "blocked" and "812 ms" in evidence and "sent its work again; the run ended ok" in evidence
    assert "did not get the agent back" in judge_tls("flip", True, [812.0], [], False, "agent_dead")[1]
    stale = Line("1", "rejected", b"", "stale: made 3.1 s ago")
    outcome, evidence = judge_tls("late", True, [], [stale], False, "timeout")
    assert outcome == "blocked" and "the protocol inside refused its frame: stale" in evidence
    assert judge_tls("late", True, [], [], False, "ok")[0] == "succeeded"
    assert judge_tls("flip", False, [], [], False, "ok")[0] == "n/a"


def test_the_fallback_rewrites_the_offered_protocol_once_and_is_judged_by_what_crossed() -> None:
    from gaiamesh.bench.attacks.judge import fallback, judge_fallback

    asked = (b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
             b"Sec-WebSocket-Protocol: gaiamesh.signed\r\n\r\n")  # fmt: skip
    weak = fallback(asked)
    assert weak is not None and b"Sec-WebSocket-Protocol: gaiamesh.json\r\n" in weak and b"signed" not in weak
    assert fallback(weak) is None  # json is the weakest already
    tamper = Tamper("rehead", way=Way.DOWN, alter=fallback)
    s = Splice(tamper, Seen())
    assert b"".join(x.data for x in s.feed(Way.DOWN, asked)) == weak and tamper.fired
    again = Splice(tamper, Seen())
    assert b"".join(x.data for x in again.feed(Way.DOWN, asked)) == asked  # once only: the next connection passes
    answer = b"HTTP/1.1 101 Switching Protocols\r\nSec-WebSocket-Protocol: gaiamesh.json\r\n\r\n"
    outcome, evidence = judge_fallback(True, 0, answer, "ok", None)
    assert outcome == "blocked" and "naming gaiamesh.json" in evidence and "made another" in evidence
    assert judge_fallback(True, 3, answer, "ok", None)[0] == "succeeded"
    assert judge_fallback(False, 0, b"", "ok", None)[0] == "n/a"


def test_a_crossed_proof_is_asked_for_under_one_protocol_and_handed_back_under_the_relays() -> None:
    from gaiamesh.bench.attacks.judge import judge_crossproof
    from gaiamesh.bench.attacks.run import tamper_for

    asked = (b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
             b"Sec-WebSocket-Protocol: gaiamesh.anp\r\n\r\n")  # fmt: skip
    tamper = tamper_for("crossproof", 60.0)
    assert tamper is not None
    s = Splice(tamper, Seen())
    sent = b"".join(x.data for x in s.feed(Way.DOWN, asked))
    assert b"Sec-WebSocket-Protocol: gaiamesh.json\r\n" in sent and b"anp" not in sent and tamper.fired
    answer = (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nSec-WebSocket-Protocol: gaiamesh.json\r\n"
              b"X-Gaiamesh-Proof: 00ff\r\n\r\n")  # fmt: skip
    back = b"".join(x.data for x in s.feed(Way.UP, answer))
    # the relay reads the protocol it asked for; only the proof, made for json, can tell
    assert b"Sec-WebSocket-Protocol: gaiamesh.anp\r\n" in back and b"X-Gaiamesh-Proof: 00ff" in back
    assert tamper.answer == answer  # what the agent said, for the evidence
    json_asked = asked.replace(b"gaiamesh.anp", b"gaiamesh.json")
    other = tamper_for("crossproof", 60.0)
    assert other is not None and other.alter is not None
    assert b"gaiamesh.binary" in (other.alter(json_asked) or b"")  # under json the other one is binary
    outcome, evidence = judge_crossproof(True, 0, "connect_failed", "did not prove this run's mesh token")
    assert outcome == "blocked" and "made for another protocol" in evidence
    assert judge_crossproof(True, 4, "error", None)[0] == "succeeded"
    assert judge_crossproof(False, 0, "ok", None)[0] == "n/a"


def test_the_summary_tells_a_broken_run_from_a_silently_changed_answer() -> None:
    from gaiamesh.bench.attacks.judge import AttackRow
    from gaiamesh.bench.attacks.report import markdown, summary

    def row(attack: str, outcome: str, status: str, changed: bool = False) -> AttackRow:
        return AttackRow(protocol="json", transport="relay", security="none", attack=attack, outcome=outcome,  # type: ignore[arg-type]
                         evidence="e", frames_lost=0, answer_changed=changed, status=status, calm_status="ok",
                         bytes_delta=0, audit_ok=True)  # fmt: skip

    rows = [row("flip", "succeeded", "agent_error"), row("tap", "succeeded", "ok"), row("poison", "n/a", "")]
    s = summary(rows)
    assert (s["answers_changed"], s["runs_broken"]) == (0, 1)  # a flip that broke its run is not silent
    md = markdown(rows, {"window_s": 3.0})
    assert "answers changed silently 0" in md and "runs the attack broke 1" in md
    assert "replay window of these runs is 3 s" in md and "default of 60 s" in md  # not the docs' 60 s unsaid
    assert "| json | flip | succeeded | agent_error | e |" in md


def test_the_matrix_png_holds_its_title_and_legend_with_few_columns(tmp_path: Path) -> None:
    from PIL import Image

    from gaiamesh.bench.attacks.judge import AttackRow
    from gaiamesh.bench.attacks.report import plot

    rows = [AttackRow(protocol="json", transport="relay", security="none", attack=a, outcome=o,  # type: ignore[arg-type]
                      evidence="e", frames_lost=0, answer_changed=False, status="ok", calm_status="ok", bytes_delta=0,
                      audit_ok=True) for a, o in (("tap", "succeeded"), ("flip", "n/a"))]  # fmt: skip
    plot(rows, tmp_path / "attacks.png")
    width, _ = Image.open(tmp_path / "attacks.png").size
    # the title's longest line at 110 dpi, about 6 px a character: a figure cut to the axes is narrower
    longest = max(len(line) for line in "(relay's WebSocket; /native: its own wire; +tls, +mtls: under WIRE_TLS)".splitlines())
    assert width >= longest * 6, width


async def test_a_refused_rogues_evidence_is_the_relays_refusal_not_advice_about_a_port_clash(tmp_path: Path) -> None:
    """The bench put the rogue there: the evidence says why the relay refused it, and leaves out
    the advice a user's run gets for the same refusal (another stack on the port? make down)."""
    s = settings_for(tmp_path, free_port_block(4), TOOLS, mesh_token="tok")
    target = next(a for a in agent_specs(s) if a.tool == "extract")
    task = load_task(TASKS / "solar-farm")
    async with mesh(s):
        calm = await run_and_finish(MeshNetwork(s, task, tmp_path / "calm", quiet=True, lineup=lineup(s)))
        cells = Cells("json", "relay", "none", calm)
        row = await rogue_cell(cells, "impersonate", s, task, target, None, tmp_path / "impersonate")
    assert calm.status == "ok" and (row.outcome, row.status) == ("blocked", "connect_failed")
    assert row.evidence.startswith("the relay refused the rogue: what answers at ")
    assert row.evidence.endswith("did not prove this run's mesh token: it is not one of this run's agents")
    assert "holds port" not in row.evidence and "make down" not in row.evidence
    kept = json.loads((tmp_path / "impersonate" / "metrics.json").read_text())["error"]
    assert "--base-port" in kept and "make down" in kept  # metrics.json keeps the whole message
