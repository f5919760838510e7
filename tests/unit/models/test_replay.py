"""LLM_BACKEND=replay: calls recorded in a run's memory are answered again from the record."""

from __future__ import annotations

import asyncio
import io
import json
import tarfile
from pathlib import Path

import pytest

from gaiamesh.errors import ConfigError, ModelError
from gaiamesh.models.backends.base import Ask, Completion, ModelKind, Scores
from gaiamesh.models.backends.replay import ReplayBackend
from gaiamesh.models.llm import LLMClient, LLMUsage, make_backend
from gaiamesh.settings import load_settings


class Server:
    """A stand-in model server: answers by the prompt's length, and counts what it did."""

    name, where, model = "ollama", "http://stand-in", "tiny:1b"

    async def kind(self) -> ModelKind:
        return "base"

    async def check(self) -> None:
        return None

    async def complete(self, ask: Ask) -> Completion:
        return Completion(f"answer {len(ask.prompt.text)}", len(ask.prompt.text), 3)

    async def score(self, prompt: str, continuations: list[str]) -> Scores | None:
        return Scores([-float(len(c)) for c in continuations], len(prompt), len(continuations))

    async def aclose(self) -> None:
        return None


async def record(folder: Path) -> LLMUsage:
    """Two calls through the live client, kept as an agent keeps them (memory.json)."""
    usage = LLMUsage()
    live = LLMClient(Server())  # type: ignore[arg-type]
    assert await live.complete("Q: who built it?\nA:", usage) == "answer 19"
    assert await live.score("Q: when?\nA:", [" 1901", " in 1901"], usage) == [-5.0, -8.0]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "memory.json").write_text(json.dumps({"steps": [{"llm_calls": usage.log}]}))
    return usage


async def test_a_replay_gives_the_recorded_answers_counts_and_time(tmp_path: Path) -> None:
    live = await record(tmp_path / "ws" / "1" / "run-1")
    usage = LLMUsage()
    replay = LLMClient(ReplayBackend(tmp_path, "tiny:1b"))
    assert await replay.complete("Q: who built it?\nA:", usage) == "answer 19"
    assert await replay.score("Q: when?\nA:", [" 1901", " in 1901"], usage) == [-5.0, -8.0]
    # the same counts and the same time to the last digit: frames that carry them are the same bytes
    assert (usage.calls, usage.tokens, usage.llm_ms) == (live.calls, live.tokens, live.llm_ms)
    assert (await replay.profile(need_scores=True)).scores is True  # its records hold scores


async def test_a_call_the_record_lacks_is_an_error_naming_it(tmp_path: Path) -> None:
    await record(tmp_path)
    replay = LLMClient(ReplayBackend(tmp_path, "tiny:1b"))
    with pytest.raises(ModelError, match=r"replay: no recorded answer for this complete call .* 'Q: who else\?"):
        await replay.complete("Q: who else?", LLMUsage())
    with pytest.raises(ModelError, match="no recorded call of MODEL='other:7b'"):
        await LLMClient(ReplayBackend(tmp_path, "other:7b")).profile()


async def test_records_are_read_from_run_archives(tmp_path: Path) -> None:
    await record(tmp_path / "live")
    body = (tmp_path / "live" / "memory.json").read_bytes()
    (tmp_path / "runs" / "t1").mkdir(parents=True)
    with tarfile.open(tmp_path / "runs" / "t1" / "run_artifacts.tar.gz", "w:gz") as tar:
        info = tarfile.TarInfo("workspaces/1/memory.json")
        info.size = len(body)
        tar.addfile(info, io.BytesIO(body))
    replay = LLMClient(ReplayBackend(tmp_path / "runs", "tiny:1b"))
    assert await replay.complete("Q: who built it?\nA:", LLMUsage()) == "answer 19"


def test_the_replay_backend_is_configured_by_its_folder(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="LLM_BACKEND=replay needs REPLAY_FROM"):
        make_backend(load_settings(llm_backend="replay"))
    with pytest.raises(ModelError, match="does not exist"):
        make_backend(load_settings(llm_backend="replay", replay_from=tmp_path / "nowhere"))


async def test_a_replay_at_the_recorded_pace_takes_the_recorded_time(tmp_path: Path) -> None:
    folder = tmp_path / "ws" / "1" / "run-1"
    folder.mkdir(parents=True)
    usage = LLMUsage()
    await LLMClient(Server()).complete("Q: who built it?\nA:", usage)  # type: ignore[arg-type]
    usage.log[0]["ms"] = 1500.0  # as if the model had taken 1.5 s
    (folder / "memory.json").write_text(json.dumps({"steps": [{"llm_calls": usage.log}]}))
    loop = asyncio.get_running_loop()
    for paced, at_least, at_most in ((False, 0.0, 1.0), (True, 1.5, 60.0)):
        started = loop.time()
        await LLMClient(ReplayBackend(tmp_path, "tiny:1b", paced=paced)).complete("Q: who built it?\nA:", LLMUsage())
        assert at_least <= loop.time() - started < at_most, paced


async def test_two_agents_that_asked_the_same_get_each_its_own_recorded_time(tmp_path: Path) -> None:
    for node, tool, ms in (("0", "search", 700.0), ("1", "extract", 7400.0)):
        usage = LLMUsage()
        await LLMClient(Server()).score("Q: when?\nA:", [" 1901"], usage)  # type: ignore[arg-type]
        usage.log[0]["ms"] = ms  # the same request, answered at another time
        (tmp_path / node).mkdir()
        memory = {"tool": tool, "steps": [{"llm_calls": usage.log}]}
        (tmp_path / node / "memory.json").write_text(json.dumps(memory))
    for tool, ms in (("search", 700.0), ("extract", 7400.0), ("reason", 700.0)):  # reason asked none: the first
        usage = LLMUsage()
        await LLMClient(ReplayBackend(tmp_path, "tiny:1b", tool=tool)).score("Q: when?\nA:", [" 1901"], usage)
        assert usage.llm_ms == ms, tool
