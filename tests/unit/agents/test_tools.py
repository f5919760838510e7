import pytest

from gaiamesh.agents.catalog import get_tool, registered, subscriptions
from gaiamesh.agents.teams import TEAMS, agent_specs, default_agents, lineup, settled, team_specs, tools_of
from gaiamesh.mesh.frames import Packet, PacketType, chunk_document, make_packet
from gaiamesh.models.llm import LLMUsage
from gaiamesh.models.prompts import (
    AnswerReply,
    Prompt,
    answer_prompt,
    answer_schema,
    clean_answer,
    parse_reply,
    parse_triple,
)
from gaiamesh.pipeline.reason import choose, valid
from gaiamesh.pipeline.text import rank, sentences, terms
from gaiamesh.settings import STRATEGIES, MeshSettings
from gaiamesh.tools.tool import ToolContext

from ..fakes import FakeLLM

DOC = (
    "The Korrin farm was built by Halvard Energy in 2019 near the village of Oster Brae. "
    "It covers 212 hectares of former grazing land. "
    "The farm has an installed capacity of 148 megawatts, enough for 41,000 homes. "
    "Sheep graze between the rows, managed by shepherd Ana Voss. " * 3
)
Q = "What is the installed capacity of the farm?"


def ctx(answer: str = "148 megawatts") -> ToolContext:
    return ToolContext(llm=FakeLLM(answer), usage=LLMUsage())  # type: ignore[arg-type]


def pkt(ptype: PacketType, payload: dict, question: str = Q) -> Packet:
    return make_packet(ptype, payload, run_id="r", src="x", seq=1, question=question)


async def call(tool: str, c: ToolContext, packet: Packet) -> dict:
    """Run a tool and return its payload as it goes on the wire."""
    return (await get_tool(tool).run(c, packet)).model_dump()


def test_registry_has_each_strategys_tools_one_consumed_type_each() -> None:
    import gaiamesh.orchestrated  # noqa: F401  (as the agent does: registers the team's tools)

    assert {"extract", "reason", "search", "triple"} <= set(registered())  # the pipeline
    assert {"orchestrator", "research", "utility"} <= set(registered())  # the orchestrated team
    assert subscriptions()["search"] == frozenset({"doc_init"})
    assert get_tool("reason").tag == "final_answer"
    with pytest.raises(ValueError, match="unknown tool 'fly'"):
        get_tool("fly")


def test_what_each_tool_emits_and_which_answer_text() -> None:
    """A tool's agent emits its output, an error when it fails, and sub-tasks when it waits for
    results; only search gives a plain text request a meaning (no model, no earlier stage)."""
    emitted = {name: sorted(get_tool(name).emitted) for name in ("search", "orchestrator", "coordinator")}
    assert emitted == {
        "search": ["error", "search_docs"],
        "orchestrator": ["data_event", "error", "subtask"],
        "coordinator": ["data_event", "error", "subtask"],
    }
    assert [name for name in registered() if get_tool(name).text is not None] == ["search"]
    search_text = get_tool("search").text
    assert search_text is not None
    passages = search_text(Q, DOC)
    assert 0 < len(passages) <= 3 and "148 megawatts" in passages[0]


def test_each_strategys_team_is_declared_once_from_its_own_tools() -> None:
    assert set(TEAMS) == set(STRATEGIES)  # every strategy a run may ask for has a team
    assert tools_of("pipeline") == ("search", "extract", "triple", "reason")
    assert tools_of("orchestrated") == ("orchestrator", "research", "utility")
    unset = MeshSettings(strategy="orchestrated")  # AGENTS unset: the strategy's own team
    line = "0=orchestrator@127.0.0.1:9000,1=research@127.0.0.1:9001,2=utility@127.0.0.1:9002"
    assert settled(unset).agents == default_agents(strategy="orchestrated") == line
    assert agent_specs(unset) == agent_specs(settled(unset))
    both = MeshSettings(agents=default_agents() + ",4=orchestrator@h:9004?,5=mine@h:9005")  # one tool of no team
    assert [a.node_id for a in team_specs(both)] == ["0", "1", "2", "3", "5"]
    team = lineup(both.model_copy(update={"strategy": "orchestrated"}))
    assert (team.strategy, team.tools) == ("orchestrated", tools_of("orchestrated"))
    assert [a.node_id for a in team.agents] == ["4", "5"]


def test_text_helpers() -> None:
    assert terms("The farms were Opened") == ["farm", "open"]
    assert terms("She took over; it was automated") == terms("take over automation")  # lemma, then stem
    assert sentences("Dr. Ann Lee came. She left! Done") == ["Dr. Ann Lee came.", "She left!", "Done"]
    docs = ["sheep graze here", "installed capacity of 148 megawatts", "village"]
    assert rank("installed capacity", docs)[0][0] == 1


async def test_search_ranks_the_chunk_with_the_answer_and_repairs_edges() -> None:
    chunks = chunk_document(DOC, 100)
    out = await call("search", ctx(), pkt(PacketType.DOC_INIT, {"chunks": chunks}))
    assert "148 megawatts" in out["passages"][0]["text"]
    # passages grow to whole sentences even where the 100-char split cut one
    assert all(p["text"][0].isupper() for p in out["passages"])


async def test_extract_triple_reason_chain() -> None:
    c = ctx()
    passages = [{"chunk": 0, "score": 1.0, "text": DOC}]
    events = await call("extract", c, pkt(PacketType.SEARCH_DOCS, {"passages": passages, "n_chunks": 1}))
    assert "148 megawatts" in events["facts"][0]["text"]
    assert events["facts"][0]["candidate"] == "148 megawatts"
    triples = await call("triple", c, pkt(PacketType.EVENTS, events))
    assert triples["triples"][0]["object"] == "148 megawatts"
    final = await call("reason", c, pkt(PacketType.TRIPLES, triples))
    assert final["answer"] == "148 megawatts"
    assert c.usage.calls == 2 + 3 + 1 and c.usage.tokens > 0


async def test_typed_answers_and_triples_under_a_schema() -> None:
    """Where the agents hold output to schemas, each reading is a JSON object with a short
    answer, and each triple a JSON object: the chain answers as it does in free text."""
    c = ToolContext(llm=FakeLLM("148 megawatts"), usage=LLMUsage(), schemas=True)  # type: ignore[arg-type]
    q = "How much capacity does the farm have?"  # a number: its typed spans are the choices
    passages = [{"chunk": 0, "score": 1.0, "text": DOC}]
    events = await call("extract", c, pkt(PacketType.SEARCH_DOCS, {"passages": passages, "n_chunks": 1}, q))
    triples = await call("triple", c, pkt(PacketType.EVENTS, events, q))
    assert triples["triples"][0] == {"subject": "farm", "relation": "has capacity", "object": "148 megawatts",
                                     "fact": events["facts"][0]["text"]}  # fmt: skip
    final = await call("reason", c, pkt(PacketType.TRIPLES, triples, q))
    assert final["answer"] == final["reading"] == "148 megawatts"
    fake = c.llm
    assert isinstance(fake, FakeLLM)
    asked = [s for s in fake.schemas if "answer" in s["properties"]]
    assert len(asked) == 3 and all(s == answer_schema() for s in asked)  # extract's two readings, reason's one
    assert all('{"answer":' in p for p in fake.prompts if p.rstrip().endswith("Answer:"))


def test_a_reply_cut_short_is_no_reply() -> None:
    assert parse_reply(AnswerReply, '{"answer": "412 me') is None
    assert parse_reply(AnswerReply, ' {"answer": "412 metres"}\n') == AnswerReply(answer="412 metres")
    assert answer_schema()["properties"]["answer"]["type"] == "string"
    assert answer_prompt("c", "q?", structured=True).text != answer_prompt("c", "q?").text


async def test_tools_reject_empty_input() -> None:
    with pytest.raises(ValueError, match="no chunks"):
        await get_tool("search").run(ctx(), pkt(PacketType.DOC_INIT, {"chunks": []}))
    with pytest.raises(ValueError, match="no passages"):
        await get_tool("extract").run(ctx(), pkt(PacketType.SEARCH_DOCS, {"passages": [], "n_chunks": 0}))


def test_reason_prefers_valid_and_agreeing_answers() -> None:
    facts = ["Tamsin Falls has been twinned with Saint-Clair since 1987."]
    q = "Which village is Tamsin Falls paired with?"
    assert not valid("Tamsin Falls", facts, q)  # only repeats the question
    assert not valid("Paris", facts, q)  # not in the facts
    assert valid("Saint-Clair", facts, q)
    assert choose(q, facts, "Tamsin Falls", ["Saint-Clair"]) == ("Saint-Clair", "candidate0")
    assert choose("What links them?", facts, "1987", ["1987", "Saint-Clair"])[0] == "1987"  # agreement
    ranked = ["It closed on 30 November 2004.", "It was founded in 1832."]
    q2 = "When did it stop for good?"
    assert choose(q2, ranked, "1832", ["30 November 2004"])[0] == "30 November 2004"  # better-ranked fact


def test_reason_checks_the_answer_type_and_falls_back_to_typed_spans() -> None:
    # "who" wants a name: the appositive's name, not the description
    fact = ["Today the bakery is run by his great-great-granddaughter, Lowenna Pellow, since 2016."]
    desc = "his great-great-granddaughter"
    assert choose("Who runs the bakery today?", fact, desc, [desc]) == ("Lowenna Pellow", "span0")
    # an invented year is not in the facts; the best fact read alone beats the whole-context reading
    fact = ["The light was converted to electricity in 1956, and full automation followed in 1989."]
    assert choose("In which year was it fully automated?", fact, "1930", ["1989"])[0] == "1989"
    assert choose("In which year was it fully automated?", fact, "1956", ["1989"])[0] == "1989"
    # a quantity the question names by its unit is direct evidence
    zoo = ["The zoo is home to about 1,400 animals of 160 species."]
    assert choose("How many species live at the zoo?", zoo, "1,400", ["1,400"])[0] == "160"
    dam = ["The dam is 410 metres long and 31 metres high."]
    assert choose("How high is the dam?", dam, "410 metres", ["410 metres"])[0] == "31 metres"
    # questions of no particular type keep the readers' answer
    assert (
        choose("What is the estate known for?", ["It is known for vin jaune."], "vin jaune", [])[0]
        == "vin jaune"
    )


def test_prompt_helpers() -> None:
    assert parse_triple("A | b c | D)\nmore") == ("A", "b c", "D")
    assert parse_triple("nonsense") is None
    assert clean_answer(' "Dr. Rupert Ashcombe."\nQuestion:') == "Rupert Ashcombe"
    assert clean_answer("12.5.") == "12.5" and clean_answer("the U.S.") == "the U.S."


def test_each_stage_left_out_hands_its_input_on() -> None:
    doc = make_packet(PacketType.DOC_INIT, {"chunks": ["A farm. ", "It has sheep."]}, run_id="r", src="network", seq=0)
    passages = get_tool("search").passthrough(doc)  # type: ignore[misc]
    assert [(p.chunk, p.text) for p in passages.passages] == [(0, "A farm. "), (1, "It has sheep.")]
    found = make_packet(PacketType.SEARCH_DOCS, passages, run_id="r", src="0", seq=1)
    events = get_tool("extract").passthrough(found)  # type: ignore[misc]
    assert [f.text for f in events.facts] == ["A farm. ", "It has sheep."]
    handed = make_packet(PacketType.EVENTS, events, run_id="r", src="1", seq=2)
    triples = get_tool("triple").passthrough(handed)  # type: ignore[misc]
    assert triples.triples == [] and triples.facts == events.facts
    assert get_tool("reason").passthrough is None


class ScoringLLM(FakeLLM):
    """A fake whose ``/api/score`` ranks continuations by a fixed table (unit tests of one layer)."""

    def __init__(self, table: dict[str, float]) -> None:
        super().__init__()
        self.table = table

    async def score(self, asked: Prompt | str, continuations: list[str], usage: LLMUsage) -> list[float] | None:
        prompt = asked.text if isinstance(asked, Prompt) else asked
        self.scored.append(prompt)
        return [max((v for k, v in self.table.items() if k in prompt + c), default=-50.0) for c in continuations]


async def test_rerank_fuses_bm25_with_the_models_likelihood() -> None:
    from gaiamesh.pipeline.rerank import rerank

    texts = ["The mill opened in 1820.", "The mill closed in 1901.", "Its founder was Ann Lee."]
    ranked = [(0, 3.0), (1, 2.0), (2, 1.0)]
    llm = ScoringLLM({"Ann Lee": -5.0, "opened": -40.0, "closed": -45.0})
    c = ToolContext(llm=llm, usage=LLMUsage())  # type: ignore[arg-type]
    fused = await rerank(c, "Who started the mill?", texts, ranked)
    assert [i for i, _ in fused] == [0, 2, 1]  # the model lifts the paraphrase over BM25's second
    assert len(llm.scored) == 3 and c.memory["query_likelihood"][0]["2"] == -5.0
    # a model server that cannot score leaves BM25's order
    plain = ToolContext(llm=FakeLLM(), usage=LLMUsage())  # type: ignore[arg-type]
    assert await rerank(plain, "Who started the mill?", texts, ranked) == ranked


def test_reason_weighs_likelihood_triples_and_complete_dates() -> None:
    from gaiamesh.mesh.payloads import Triple
    from gaiamesh.pipeline.reason import Option, by_likelihood, complete_dates, options, related

    # facts whose clauses tie neither place to the question, so that only the other evidence weighs
    facts = ["Margit Farkas taught in Szeged.", "Some pupils came from Sopron."]
    q = "Where was Ernst Dohnal born?"
    tied = [Triple(subject="Dohnal", relation="was born in", object="Sopron", fact=facts[1])]
    assert related("Sopron", q, tied) and not related("Szeged", q, tied)
    opts = [Option("Szeged", "reading"), Option("Sopron", "span1")]
    assert by_likelihood(opts, [-4.0, -4.3], q, facts).text == "Szeged"  # likelihood, the better fact
    assert by_likelihood(opts, [-4.0, -4.3], q, facts, tied).text == "Sopron"  # the triple's evidence
    assert by_likelihood(opts, [-4.0, -6.0], q, facts, tied).text == "Szeged"  # ... is worth about 2x
    assert by_likelihood(opts, [-4.0, -3.8], q, facts).text == "Szeged"  # a better-ranked fact, a little
    assert by_likelihood(opts, [-4.0, -3.5], q, facts).text == "Sopron"
    assert by_likelihood(opts, [-3.0, -3.5], q, facts, readings=["Sopron"]).text == "Sopron"  # a fact read alone
    # a description's name becomes an option, and so do triples' arguments
    found = options("Who paid?", ["It was paid by the banker Sir Ann Lee."], "the banker Sir Ann Lee", [],
                    [Triple(subject="the bank", relation="paid", object="Lee Trust", fact="")])  # fmt: skip
    assert [o.text for o in found] == ["the banker Sir Ann Lee", "Ann Lee", "bank", "Lee Trust"]
    from gaiamesh.pipeline.reason import eligible

    agreeing = [Option("1964", "reading"), Option("1964", "candidate0"), Option("1950", "span0")]
    assert [o.source for o in eligible("When?", ["It ran from 1950 to 1964."], agreeing)] == ["reading", "span0"]
    assert complete_dates("When did it close?", agreeing[1:], [-3.0, -4.0])[0] == agreeing[1:]  # no date to yield to
    when = [Option("1958", "reading"), Option("3 March 1958", "span0"), Option("1964", "span1")]
    merged = complete_dates("When did it close?", when, [-3.3, -4.8, -4.7])
    assert [o.text for o in merged[0]] == ["3 March 1958", "1964"] and merged[1] == [-3.3, -4.7]
    assert complete_dates("In which year did it close?", when, [-3.3, -4.8, -4.7]) == (when, [-3.3, -4.8, -4.7])


def test_reason_ties_an_answer_by_its_own_clause() -> None:
    from gaiamesh.pipeline.reason import Option, by_likelihood, subject_terms, ties

    q = "Who founded the Orme Lace Museum?"
    facts = [
        "The lace works, built in 1851 by the merchant Silas Orme, closed in 1930.",
        "The collection became the museum, which was established in 1962 by the curator Ada Brisk, who ran it.",
    ]
    assert ties("Ada Brisk", q, facts) == 1  # "established" says "founded"; the museum is a part away
    assert ties("Silas Orme", q, facts) == 0  # his clause tells of building the works
    opts = [Option("Silas Orme", "reading"), Option("Ada Brisk", "span1")]
    assert by_likelihood(opts, [-4.0, -7.0], q, facts).text == "Ada Brisk"  # outweighs a 3-nat gap
    assert by_likelihood(opts, [-4.0, -10.0], q, facts).text == "Silas Orme"  # not a stray span's
    # the subject named in the option's own clause, not elsewhere in the sentence
    q = "On what date did Ivo Marr become warden?"
    facts = ["Marr took charge on 2 May 1950, and his successor, Tom Bell, was appointed on 1 June 1970."]
    assert ties("2 May 1950", q, facts) == 1 and ties("1 June 1970", q, facts) == 0
    # an appositive takes its clause from the part before it, or gives it to the part after
    q = "Who runs the bakery today?"
    assert ties("Lena Hale", q, ["Today the bakery is run by his niece, Lena Hale, who took over."]) == 1
    q = "In which town was Ivo Marr born?"
    fact = "Marr moved to Dunby from Ashwick, the town where he was born."
    assert ties("Ashwick", q, [fact]) == 2 and ties("Dunby", q, [fact]) == 1
    # a number's own comma does not split its clause; the subject is the proper names (a noun ending
    # a named phrase is not: that heuristic earned nothing, docs/results/2026-11-27-heuristics.md)
    assert ties("1,850", "How many can the hall seat?", ["It was made a hall seating 1,850."]) == 1
    assert subject_terms("Who designed the Halbury Library building?") == {"halburi", "librari"}
    # a name's shorter form tied in another sentence ties the full name too
    q = "Who laid out the galleries?"
    facts = ["They hired an engineer, Abel Roe, as agent.", "It was Roe who laid out the galleries."]
    full = [Option("Abel Roe", "reading"), Option("Roe", "span1"), Option("Ann Fisk", "span2")]
    assert ties("Abel Roe", q, facts) == 0 and ties("Roe", q, facts) == 1
    assert by_likelihood(full, [-3.5, -5.0, -3.0], q, facts).text == "Abel Roe"
