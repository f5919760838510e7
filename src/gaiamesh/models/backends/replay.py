"""``LLM_BACKEND=replay``: the model's answers read back from earlier runs, so the same runs can
be repeated (under another protocol, say) with the model held fixed and no model server.

Every call an agent makes is recorded in its run's ``memory.json`` (``llm_calls``: the request,
the answer, the server's counts and the time taken), and so in ``run_artifacts.tar.gz``. This
backend reads every record under ``REPLAY_FROM`` (folders of runs, their archives, or agent
workspaces), keyed by the request itself. A call no record holds is a :class:`ModelError`
naming it: a replay never makes an answer up. The counts and the time are replayed as well;
with ``REPLAY_PACE=recorded`` each call also takes that time before it answers.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import tarfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import ModelError
from .base import Ask, Completion, ModelKind, Scores, completion_request, score_request

# What a request is, for the look-up: everything asked, nothing answered or measured.
REQUEST = ("call", "model", "kind", "text", "system", "user", "num_predict", "stop", "schema", "continuations")


def request_key(call: Mapping[str, Any]) -> str:
    body = json.dumps({k: call.get(k) for k in REQUEST}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(body.encode()).hexdigest()


def _calls(memory: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    for step in memory.get("steps", []):
        for call in step.get("llm_calls", []):
            if isinstance(call, dict) and call.get("call") in ("complete", "score"):
                yield {**call, "tool": memory.get("tool")}


def _memories(root: Path) -> Iterator[dict[str, Any]]:
    """Every agent's memory under ``root``: in run folders' archives, and as files."""
    for path in sorted(root.rglob("run_artifacts.tar.gz")):
        with tarfile.open(path) as tar:
            for member in tar.getmembers():
                if member.isfile() and member.name.endswith("memory.json"):
                    f = tar.extractfile(member)
                    if f is not None:
                        yield json.loads(f.read())
    for path in sorted(root.rglob("memory.json")):
        yield json.loads(path.read_text(encoding="utf-8"))


Records = dict[str, dict[str | None, dict[str, Any]]]


def load_records(root: Path) -> Records:
    """The recorded calls under ``root``: by request, then by the tool of the agent that asked
    (the first record of each). The model is deterministic, so a request asked twice was answered
    the same; but two agents may ask one request (search and extract score the same passage), each
    at its own time, and a replayed agent gets its own tool's time back."""
    if not root.exists():
        raise ModelError(f"replay: REPLAY_FROM={root} does not exist")
    records: Records = {}
    try:
        for memory in _memories(root):
            for call in _calls(memory):
                records.setdefault(request_key(call), {}).setdefault(call["tool"], call)
    except (OSError, tarfile.TarError, json.JSONDecodeError) as exc:
        raise ModelError(f"replay: cannot read the records under {root}: {exc}") from exc
    return records


@dataclass(frozen=True)
class Abilities:
    """What the recorded server did, answered without a probe (a probe is no recorded call)."""

    scores: bool
    schemas: bool


class ReplayBackend:
    """Answers each call from the records of earlier runs."""

    name = "replay"

    def __init__(self, root: Path, model: str, paced: bool = False, tool: str | None = None) -> None:
        self.where = str(root)
        self.model = model
        self.paced = paced
        self.tool = tool  # the asking agent's tool: its own record first, where several agents asked
        self.records = load_records(root)
        calls = list(self._all())
        self.abilities = Abilities(
            scores=any(r["call"] == "score" for r in calls),
            schemas=any(r["call"] == "complete" and r.get("schema") for r in calls),
        )

    def _all(self) -> Iterator[dict[str, Any]]:
        return (call for by_tool in self.records.values() for call in by_tool.values())

    async def kind(self) -> ModelKind:
        kinds = {r["kind"] for r in self._all() if r.get("call") == "complete"}
        return "chat" if kinds == {"chat"} else "base"

    async def check(self) -> None:
        if not any(r.get("model") == self.model for r in self._all()):
            models = sorted({str(r.get("model")) for r in self._all()})
            raise ModelError(f"replay: no recorded call of MODEL={self.model!r} under {self.where} (recorded: {models})")

    def _find(self, request: dict[str, Any]) -> dict[str, Any]:
        by_tool = self.records.get(request_key(request))
        found = None if by_tool is None else by_tool.get(self.tool) or next(iter(by_tool.values()))
        if found is None:
            start = " ".join(str(request.get("text", "")).split())[-120:]
            raise ModelError(f"replay: no recorded answer for this {request['call']} call under {self.where} (its prompt ends: {start!r})")
        return found

    async def _pace(self, got: Mapping[str, Any]) -> None:
        if self.paced and got.get("ms"):
            await asyncio.sleep(float(got["ms"]) / 1000)  # the model's recorded time, imposed

    async def complete(self, ask: Ask) -> Completion:
        got = self._find(completion_request(ask, self.model))
        await self._pace(got)
        return Completion(str(got["answer"]), got.get("prompt_tokens"), got.get("eval_tokens"), got.get("ms"))

    async def score(self, prompt: str, continuations: list[str]) -> Scores | None:
        got = self._find(score_request(prompt, continuations, self.model))
        await self._pace(got)
        return Scores([float(v) for v in got["logprobs"]], got.get("prompt_tokens"), got.get("eval_tokens"), got.get("ms"))

    async def aclose(self) -> None:
        return None
