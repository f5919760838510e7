"""A two-fact question's split: by the hop splitter's rules or written by the model, decided
once by ``search`` and handed on to ``extract`` (a stand-in model here; the real one in e2e)."""

from __future__ import annotations

import json
from typing import Any

from gaiamesh.agents.catalog import get_tool
from gaiamesh.mesh.frames import PacketType, make_packet
from gaiamesh.mesh.payloads import Split
from gaiamesh.models.llm import LLMUsage
from gaiamesh.models.prompts import SPLIT_SCHEMA
from gaiamesh.pipeline.split import split_question
from gaiamesh.settings import load_settings
from gaiamesh.tools.tool import ToolContext

DOC = ("The Aske choir was founded by Ida Venn in 1921. Ida Venn was born in Tarnby, a fishing town. "
       "The choir's first conductor, Olaf Brun, came from Hale.")  # fmt: skip
Q = "In which town was the founder of the Aske choir born?"


class Splitter:
    """Writes ``reply`` for a split prompt (and records the schema it was held to)."""

    def __init__(self, reply: str) -> None:
        self.reply, self.schemas = reply, []  # type: list[Any]

    async def complete(self, prompt: Any, usage: LLMUsage, num_predict: int = 24, stop: Any = (), schema: Any = None) -> str:
        usage.calls += 1
        self.schemas.append(schema)
        return self.reply if "Split:" in prompt.text else " Tarnby\n"

    async def score(self, prompt: Any, continuations: list[str], usage: LLMUsage) -> None:
        return None


def ctx(reply: str, decompose: str = "model", schemas: bool = True) -> ToolContext:
    settings = load_settings(decompose=decompose)
    return ToolContext(llm=Splitter(reply), usage=LLMUsage(), settings=settings, schemas=schemas)  # type: ignore[arg-type]


async def test_the_model_writes_the_split_under_its_schema_and_search_hands_it_on() -> None:
    written = json.dumps({"two_facts": True, "first": "Who founded the Aske choir?", "second": "Where was {bridge} born?"})
    c = ctx(written)
    doc = make_packet(PacketType.DOC_INIT, {"chunks": [DOC]}, run_id="r", src="n", seq=0, question=Q)
    found = await get_tool("search").run(c, doc)
    assert found.split == Split(by="model", inner="Who founded the Aske choir?", outer="Where was {bridge} born?")
    assert c.llm.schemas[0] == SPLIT_SCHEMA  # type: ignore[attr-defined]
    packet = make_packet(PacketType.SEARCH_DOCS, found.model_dump(), run_id="r", src="n", seq=1, question=Q)
    events = await get_tool("extract").run(ctx("not asked again"), packet)
    assert events.hops and events.hops[0].question == "Who founded the Aske choir?"


async def test_one_fact_or_an_unusable_split_is_no_split_and_the_rules_stay_the_default() -> None:
    for reply in ('{"two_facts": false, "first": "", "second": ""}', '{"two_facts": true, "first": "x", "second": "no slot"}',
                  "not JSON"):  # fmt: skip
        assert await split_question(ctx(reply), Q) == Split(by="model")
    ruled = await split_question(ctx("unused", decompose="rules"), Q)
    assert ruled.by == "rules" and ruled.inner and "{bridge}" in ruled.outer
