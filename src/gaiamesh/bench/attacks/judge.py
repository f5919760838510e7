"""The attacks of ``gaiamesh bench-attacks`` and how each is judged, in pure code.

Each attack is a test of the defence: the judge reads the run's own records (the relay's
``frames.jsonl`` line for the frame the attacker sent, the run's status and answer, what an agent
answered a handshake) and says ``blocked`` (refused at the edge, with the line that shows it),
``detected`` (taken, then caught and counted) or ``succeeded`` (with what the attacker got);
``n/a`` where the attack has nothing to act on (a downgrade of a protocol that carries no proof).
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import msgpack
from pydantic import BaseModel, ConfigDict

from ...errors import RunStatus
from ...mesh.frames import chunk_document
from ...mesh.protocols import canonical_json
from ...mesh.subprotocols import subprotocol

Outcome = Literal["blocked", "detected", "succeeded", "n/a"]


@dataclass(frozen=True)
class Attack:
    name: str
    where: Literal["wire", "admission"]
    what: str


ATTACKS = (
    Attack("tap", "wire", "a passive tap records both ways: can it read the document, the question, the answer?"),
    Attack("flip", "wire", "one bit of an agent's answer flipped (a letter's case, so the text stays well formed)"),
    Attack("truncate", "wire", "an agent's answer cut to half its length"),
    Attack("replay", "wire", "an agent's answer sent again at once, within the replay window"),
    Attack("late", "wire", "an agent's answer held on the wire past the replay window, then delivered"),
    Attack("reorder", "wire", "the relay's first two frames to an agent delivered in the other order"),
    Attack("downgrade", "wire", "an agent's answer stripped to the bare packet (plain json, no envelope or proof)"),
    Attack("fallback", "wire", "the relay's upgrade request re-offered under the weakest protocol (json): a "
           "downgrade of the protocol itself, not of one frame"),
    Attack("poison", "wire", "a directory document (an A2A card, an ACP agent list, an ANP DID document) on its way "
           "to the relay re-pointed at the attacker's endpoint"),
    Attack("crossproof", "wire", "one protocol's proof offered under another: the relay's upgrade request re-offered "
           "under another protocol, and the agent's answer (its proof made for that one) handed back naming the "
           "protocol the relay asked for"),
    Attack("impersonate", "admission", "a rogue process answers at an agent's address claiming its node and tool"),
    Attack("reuse", "admission", "the rogue answers with the real agent's proof, captured from an earlier handshake"),
    Attack("handshake_replay", "admission", "the relay's captured upgrade request sent again to the agent"),
    Attack("observer", "admission", "a process asks an agent for a connection with no proof at all"),
)
BY_NAME = {a.name: a for a in ATTACKS}
WIRE = tuple(a.name for a in ATTACKS if a.where == "wire")


class AttackRow(BaseModel):
    """One row of ``attacks.csv``: a protocol x transport x attack, judged."""

    model_config = ConfigDict(extra="forbid")

    protocol: str
    transport: str
    security: str  # WIRE_TLS on the relay's wire: none, tls, mtls
    attack: str
    outcome: Outcome
    evidence: str
    frames_lost: int
    answer_changed: bool
    status: str  # the attacked run's status ("" where no run was made)
    calm_status: str
    bytes_delta: int  # the attacked run's bytes on the wire minus the calm run's
    audit_ok: bool | None  # None: no run to audit

    @property
    def column(self) -> str:
        """The matrix's column: the protocol, and the transport security under it."""
        return self.protocol + ("/native" if self.transport == "native" else "") + (
            "" if self.security == "none" else f"+{self.security}")  # fmt: skip


# --- the tap's reading ------------------------------------------------------------------------
def objects_in(payload: bytes) -> Iterator[Any]:
    """Every structure an attacker who knows the usual encodings finds in a frame: JSON (from its
    first brace), zlib-compressed JSON, msgpack, each after a short binary header."""
    start = payload.find(b"{")
    while 0 <= start < 256:  # a brace may also be a byte of a binary header (a nonce, a signature)
        try:
            yield json.loads(payload[start:].decode("utf-8"))
            break
        except (UnicodeDecodeError, json.JSONDecodeError):
            start = payload.find(b"{", start + 1)
    for skip in range(0, min(len(payload), 24)):
        if payload[skip : skip + 1] == b"\x78":  # zlib's header
            try:
                yield from objects_in(zlib.decompress(payload[skip:]))
                return
            except zlib.error:
                pass
        if 0x80 <= payload[skip] <= 0x8F or payload[skip] in (0xDE, 0xDF):  # a msgpack map
            try:
                obj = msgpack.unpackb(payload[skip:], raw=False)
            except (ValueError, msgpack.ExtraData, msgpack.FormatError, msgpack.StackError, UnicodeDecodeError):
                continue
            if isinstance(obj, dict):
                yield obj
                return


def strings_in(obj: Any) -> Iterator[str]:
    if isinstance(obj, str):
        yield obj
        if obj[:1] in "{[":  # JSON carried as text (A2A's and ACP's parts)
            try:
                yield from strings_in(json.loads(obj))
            except json.JSONDecodeError:
                pass
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from strings_in(k)
            yield from strings_in(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from strings_in(v)


def read_by_tap(payloads: list[bytes]) -> str:
    """All the text the tap could read out of ``payloads``, one string a line."""
    return "\n".join(s for p in payloads for obj in objects_in(p) for s in strings_in(obj))


def packet_in(payload: bytes) -> dict[str, Any] | None:
    """The packet a frame carries, found the way the tap finds text (None: none found)."""
    for obj in objects_in(payload):
        for found in dicts_in(obj):
            if {"type", "src", "run_id"} <= set(found):
                return found
    return None


def dicts_in(obj: Any) -> Iterator[dict[str, Any]]:
    if isinstance(obj, dict):
        yield obj
        for v in obj.values():
            yield from dicts_in(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from dicts_in(v)
    elif isinstance(obj, str) and obj[:1] in "{[":  # JSON carried as text (Agora's body, MCP's content)
        try:
            yield from dicts_in(json.loads(obj))
        except json.JSONDecodeError:
            pass


def what_the_tap_read(text: str, document: str, question: str, answer: str) -> tuple[int, int, bool, bool]:
    """(document chunks read, chunks, question read, answer read)."""
    chunks = chunk_document(document)
    read = sum(1 for c in chunks if c in text)
    return read, len(chunks), question in text, bool(answer) and answer in text


# --- the tampers ------------------------------------------------------------------------------
def flip(payload: bytes) -> bytes:
    """One bit of the content flipped: the case of a letter in the middle of the longest text the
    packet carries where the frame shows it as it is (else the letter nearest the frame's middle),
    so JSON stays JSON and what changes is what the agent said."""
    packet = packet_in(payload)
    texts = sorted({t for t in strings_in(packet) if len(t) >= 8}, key=len, reverse=True) if packet else []
    for text in texts:
        at = payload.find(text.encode())
        if at >= 0:
            return flip_letter(payload, at + len(text.encode()) // 2)
    return flip_letter(payload, len(payload) // 2)


def flip_letter(payload: bytes, mid: int) -> bytes:
    for i in sorted(range(len(payload)), key=lambda i: abs(i - mid)):
        if 0x61 <= payload[i] <= 0x7A or 0x41 <= payload[i] <= 0x5A:
            return payload[:i] + bytes([payload[i] ^ 0x20]) + payload[i + 1 :]
    return payload[:mid] + bytes([payload[mid] ^ 0x01]) + payload[mid + 1 :]


def truncate(payload: bytes) -> bytes:
    return payload[: len(payload) // 2]


def fallback(head: bytes) -> bytes | None:
    """An upgrade request whose offered subprotocol is json's (None: it offers json already)."""
    found = _reprotocol(head, subprotocol("json").encode())
    return None if found is None or found[1] == subprotocol("json").encode() else found[0]


def _reprotocol(head: bytes, value: bytes) -> tuple[bytes, bytes] | None:
    """``head`` with its Sec-WebSocket-Protocol line naming ``value``, and what it named (None:
    the head has no such line)."""
    lines = head.split(b"\r\n")
    for i, line in enumerate(lines):
        name, _, was = line.partition(b":")
        if name.strip().lower() == b"sec-websocket-protocol":
            return b"\r\n".join([*lines[:i], b"Sec-WebSocket-Protocol: " + value, *lines[i + 1 :]]), was.strip()
    return None


@dataclass
class CrossProof:
    """The rewrites of ``crossproof``: the relay's upgrade request offers another protocol than
    the one the relay asked for (``request``), and the agent's answer, whose proof was made for
    that other one, goes back naming the relay's (``answer``), so that only the proof can tell."""

    asked: bytes = b""  # the protocol the relay offered

    def request(self, head: bytes) -> bytes | None:
        found = _reprotocol(head, subprotocol("json").encode())
        if found is None:
            return None
        rewritten, self.asked = found
        if self.asked == subprotocol("json").encode():  # a json run: offer binary instead
            rewritten = rewritten.replace(self.asked, subprotocol("binary").encode())
        return rewritten

    def answer(self, head: bytes) -> bytes:
        found = _reprotocol(head, self.asked) if self.asked else None
        return head if found is None else found[0]


def downgrade(payload: bytes) -> bytes | None:
    """The bare packet as the ``json`` protocol would carry it (None: the tap finds no packet)."""
    packet = packet_in(payload)
    return None if packet is None else canonical_json(packet)


# --- the judge --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Line:
    """What the judge needs of one ``frames.jsonl`` line."""

    src: str
    status: str
    blob: bytes
    error: str | None

    @classmethod
    def of(cls, record: dict[str, Any]) -> Line:
        return cls(record["src"], record["status"], base64.b64decode(record["b64"]), record.get("error"))


DONE = {"flip": "flipped", "truncate": "truncated", "replay": "copied", "late": "held", "reorder": "reordered"}


def judge_fallback(fired: bool, frames_after: int, answer: bytes, status: str, error: str | None) -> tuple[Outcome, str]:
    """The outcome of the relay's upgrade request re-offered as json: whether the connection it
    rewrote carried frames afterwards (``answer``: the agent's answer to it)."""
    if not fired:
        return "n/a", "no upgrade request offering another protocol went by"
    said = answer.split(b"\r\n", 1)[0].decode("latin-1")
    if frames_after:
        return "succeeded", f"the agent answered {said!r} and {frames_after} frames crossed that connection; the run ended {status}"
    if status == RunStatus.CONNECT_FAILED:
        return "blocked", f"the relay refused the connection: {error}"
    named = next((ln.split(b":", 1)[1].strip().decode("latin-1") for ln in answer.split(b"\r\n")
                  if ln.lower().startswith(b"sec-websocket-protocol:")), "no protocol")  # fmt: skip
    return "blocked", (f"the agent answered {said!r} naming {named}, which the relay had not offered: the relay's "
                       f"client refused that connection and made another; the run ended {status}")  # fmt: skip


def judge_crossproof(fired: bool, frames_after: int, status: str, error: str | None) -> tuple[Outcome, str]:
    """The outcome of ``crossproof``: whether the connection whose answer carried a proof made for
    another protocol carried frames afterwards."""
    if not fired:
        return "n/a", "no upgrade request went by"
    if frames_after:
        return "succeeded", (f"the relay took a proof the agent made for another protocol: {frames_after} frames "
                             f"crossed that connection; the run ended {status}")  # fmt: skip
    if status == RunStatus.CONNECT_FAILED:
        return "blocked", f"the relay refused the agent's proof, made for another protocol: {error}"
    return "blocked", f"that connection carried no frame; the run ended {status}"


def judge_tls(attack: str, fired: bool, lost: list[float], refused: list[Line], rejoined: bool,
              status: str) -> tuple[Outcome, str]:  # fmt: skip
    """The outcome of a wire attack on a TLS record (the attacker sees no frame), from the times
    (ms) the relay lost its connection to the attacked agent, the frames it refused from that
    agent, whether the agent came back into the run, and how the run ended."""
    record = f"the {DONE.get(attack, attack)} record"
    if not fired:
        return "n/a", "no application-data record went past the handshake for the attack to act on"
    if lost:
        back = "reached the agent again and sent its work again" if rejoined else "did not get the agent back"
        return "blocked", (f"TLS refused {record} (it failed authentication or came out of order): the relay "
                           f"lost its connection at {lost[0]:.0f} ms and {back}; the run ended {status}")  # fmt: skip
    if refused:
        return "blocked", f"TLS took {record}; the protocol inside refused its frame: {refused[0].error}; the run ended {status}"
    return "succeeded", f"{record} was taken: TLS kept the connection and nothing refused it; the run ended {status}"


def judge_wire(attack: str, sent: bytes | None, target: str, lines: list[Line], status: str) -> tuple[Outcome, str]:
    """The outcome of a wire attack on ``target``'s answer from the relay's log of the run that
    ended with ``status``."""
    if sent is None:
        return "n/a", "the attack found no frame to act on"
    mine = [ln for ln in lines if ln.src == target and ln.blob == sent]
    if attack == "replay":
        if len(mine) < 2:
            return "blocked", f"the copy was not logged as a frame ({len(mine)} line(s) of those bytes)"
        copy = mine[1]
        if copy.status == "rejected":
            return "blocked", f"the relay refused the copy: {copy.error}"
        return "succeeded", f"the relay took the same frame twice and passed both copies on; the run ended {status}"
    if not mine:
        return "blocked", "the relay logged no frame with the attacker's bytes"
    line = mine[0]
    if line.status == "rejected":
        return "blocked", f"the relay refused it: {line.error}"
    taken = {"flip": "the relay took the altered frame as the agent's",
             "truncate": "the relay took the truncated frame",
             "late": "the relay took the frame after it was held past the replay window",
             "downgrade": "the relay took the bare packet without its protocol's envelope or proof"}  # fmt: skip
    return "succeeded", f"{taken.get(attack, 'the relay took it')}; the run ended {status}"
