"""A record for `gaiamesh stream --replay` with no model: every query's answerer call, answered
"an answer of a few words" (120 prompt tokens, 6 generated, 150 ms recorded), as one
`memory.json` the replay backend reads. What the stream measures at `--pace none` is the wire and
the agents' own code, not the model: the answers only have to be the same before and after.

    PYTHONPATH=src python docs/results/2026-12-05-stream-native-scale/synth_record.py \
        tasks-stream/protocolbench-top1000.jsonl /tmp/record
"""

import asyncio
import json
import sys
from pathlib import Path

from gaiamesh.models.backends.base import Completion
from gaiamesh.models.llm import LLMClient, LLMUsage
from gaiamesh.models.prompts import answer_prompt
from gaiamesh.stream.team import ANSWER_TOKENS


class Fixed:
    """A model backend that answers every completion alike (the call is recorded as a real one)."""

    name = "fixed"
    where = "nowhere"
    model = "gemma3:270m"  # MODEL's default: the replay checks the record names it

    async def kind(self) -> str:
        return "base"

    async def check(self) -> None:
        return None

    async def complete(self, ask: object) -> Completion:
        return Completion("an answer of a few words", 120, 6, 150.0)

    async def score(self, prompt: str, continuations: list[str]) -> None:
        return None

    async def aclose(self) -> None:
        return None


async def main(queries: Path, out: Path) -> None:
    client = LLMClient(Fixed(), kind="base")  # type: ignore[arg-type]
    calls = []
    for line in queries.read_text(encoding="utf-8-sig").splitlines():
        usage = LLMUsage()
        await client.complete(answer_prompt("", json.loads(line)["q"]), usage, num_predict=ANSWER_TOKENS)
        calls += usage.log
    out.mkdir(parents=True, exist_ok=True)
    (out / "memory.json").write_text(json.dumps({"tool": "answerer", "steps": [{"llm_calls": calls}]}))
    print(f"{len(calls)} calls recorded in {out / 'memory.json'}")


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), Path(sys.argv[2])))
