"""Agents written by someone else in AGENTS, by plain calls: the entry's syntax, which tools they
may stand in for, and the translation between the packets and their text (``mesh/external/``)."""

from __future__ import annotations

import pytest

from gaiamesh.agents.catalog import readings, subscriptions
from gaiamesh.agents.teams import external_announcement, lineup, settled
from gaiamesh.errors import ConfigError
from gaiamesh.mesh.core import RelayCore
from gaiamesh.mesh.external import failure, render, reply
from gaiamesh.mesh.frames import (
    FINAL_ANSWER_TAG,
    DataEventPacket,
    ErrorPacket,
    PacketType,
    ResultPacket,
    SubTaskPacket,
    TriplesPacket,
    make_packet,
)
from gaiamesh.mesh.payloads import DocInit, Fact, Hop, Triple, Triples
from gaiamesh.mesh.protocols import get_adapter
from gaiamesh.mesh.protocols.native import Undelivered
from gaiamesh.settings import ExternalAgent, load_settings, parse_agents

ENVELOPE = {"run_id": "run1", "seq": 3, "question": "How much power does the farm make?"}


def triples() -> TriplesPacket:
    body = Triples(
        triples=[
            Triple(
                subject="the farm", relation="makes", object="148 megawatts", fact="The farm makes 148 MW."
            )
        ],
        facts=[
            Fact(text="The farm makes 148 megawatts.", score=2.0),
            Fact(text="It opened in 2019.", score=1.0),
        ],
        hops=[Hop(question="Which farm?", fact="The Sunny farm.", answer="Sunny", method="rules")],
    )
    packet = make_packet(PacketType.TRIPLES, body, src="2", **ENVELOPE)
    assert isinstance(packet, TriplesPacket)
    return packet


def subtask() -> SubTaskPacket:
    body = {"sub_task_id": "s1", "parent_task_id": "run1", "assigned_agent_role": "research",
            "tool_name": "find_fact", "sub_task_input": {"query": "opened", "exclude": [1905]},
            "context_summary": "step 1 found the farm"}  # fmt: skip
    packet = make_packet(PacketType.SUBTASK, body, src="o", **ENVELOPE)
    assert isinstance(packet, SubTaskPacket)
    return packet


# --- AGENTS ---------------------------------------------------------------------------------------
def test_an_external_entry_names_its_protocol_url_and_tool() -> None:
    a2a, mcp, default_port = parse_agents(
        "3=reason@a2a+http://10.0.0.5:9300/, 5=research@mcp+http://host.example:9400/mcp/#answer?,"
        "6=utility@a2a+http://agents.example/team/a"
    )
    assert a2a.external == ExternalAgent("a2a", "http://10.0.0.5:9300/", "")
    assert (a2a.node_id, a2a.tool, a2a.host, a2a.port, a2a.optional) == (
        "3",
        "reason",
        "10.0.0.5",
        9300,
        False,
    )
    assert mcp.external == ExternalAgent("mcp", "http://host.example:9400/mcp/", "answer")
    assert (mcp.host, mcp.port, mcp.optional) == ("host.example", 9400, True)
    assert default_port.external is not None and default_port.external.url == "http://agents.example/team/a"
    assert default_port.port == 80
    assert parse_agents("0=search@127.0.0.1:9000")[0].external is None


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ("3=reason@acp+http://h:1/", "unknown external agent scheme 'acp+http'"),
        ("3=reason@a2a+https://h:1/", "unknown external agent scheme 'a2a+https'"),
        ("3=reason@a2a://h:1/", "unknown external agent scheme 'a2a'"),
        ("3=reason@mcp+http://h:1/mcp/", "an MCP agent needs the tool to call, as #TOOL"),
        ("3=reason@a2a+http://h:1/#answer", "an A2A agent takes no #tool"),
        ("3=reason@a2a+http://:1/", "names no host"),
        ("3=reason@a2a+http://h:port/", "bad port"),
    ],
)
def test_a_bad_external_entry_is_refused_saying_what_is_wrong(entry: str, says: str) -> None:
    with pytest.raises(ConfigError, match="bad AGENTS entry") as caught:
        parse_agents(entry)
    assert says in str(caught.value)


def test_an_external_agent_stands_in_for_the_answer_or_a_worker_only() -> None:
    (reason, research, search) = parse_agents(
        "3=reason@a2a+http://h:1/,5=research@mcp+http://h:2/mcp#ask,0=search@a2a+http://h:3/"
    )
    said = external_announcement(reason)
    assert (said.node_id, said.tool, said.consumes, said.reads) == ("3", "reason", {"triples"}, frozenset())
    worker = external_announcement(research)
    assert (worker.consumes, worker.reads) == (subscriptions()["research"], readings()["research"])
    with pytest.raises(ConfigError, match=r"can stand in for .*reason.*research.*utility.*, not 'search'"):
        external_announcement(search)
    s = load_settings(agents="0=search@127.0.0.1:9000,1=extract@127.0.0.1:9001,2=triple@127.0.0.1:9002,"
                      "3=reason@a2a+http://h:1/")  # fmt: skip
    assert set(lineup(s).externals) == {"3"} and len(lineup(s).agents) == 4
    assert settled(s) is s
    for refused in (lineup, settled):  # a run's line-up, and where the relay's settings are loaded
        with pytest.raises(ConfigError, match="not 'search'"):
            refused(s.model_copy(update={"agents": "0=search@a2a+http://h:1/"}))


def test_an_external_entry_is_written_back_as_it_was_read() -> None:
    from gaiamesh.deploy.swarm import swarm_agents

    line = "3=reason@a2a+http://agent-reason:9300/,5=research@mcp+http://h:8000/mcp#answer?"
    for spec in parse_agents(line):
        assert spec.external is not None
        assert parse_agents(f"{spec.node_id}={spec.tool}@{spec.external.written}") == [spec._replace(optional=False)]
    # A stack's AGENTS: a service of the stack becomes its replicas; an external agent stays itself.
    assert swarm_agents(line, frozenset({"agent-reason"})) == line


# --- packets as text ------------------------------------------------------------------------------
def test_the_answer_stage_reads_the_question_facts_and_triples() -> None:
    text = render(triples())
    assert text.splitlines()[0] == "Question: How much power does the farm make?"
    assert "- The farm makes 148 megawatts." in text and "- It opened in 2019." in text
    assert "- the farm | makes | 148 megawatts" in text and "- Which farm? -> Sunny (The Sunny farm.)" in text
    assert text.endswith("Answer the question in a few words.")


def test_a_worker_reads_its_task_inputs_and_the_document() -> None:
    doc = DocInit(chunks=["The museum ", "opened in 1905."])
    text = render(subtask(), doc)
    lines = text.splitlines()
    assert lines[:3] == ["Task: find_fact", "query: opened", "exclude: [1905]"]
    assert "What is known so far: step 1 found the farm" in lines
    assert lines[-2:] == ["Document:", "The museum opened in 1905."]
    assert "Document:" not in render(subtask())  # none received: none given


def test_a_packet_no_external_agent_works_on_is_not_rendered() -> None:
    packet = make_packet(
        PacketType.DATA_EVENT, reply(triples(), "x", "3", 1, "a2a").payload, src="3", **ENVELOPE
    )
    with pytest.raises(ValueError, match="does not work on 'data_event'"):
        render(packet)


def test_the_answer_text_is_the_final_answer_the_core_accepts() -> None:
    adapter = get_adapter("json")
    core = RelayCore("run1", adapter, [("2", "triple"), ("3", "reason")])
    core.register("2", subscriptions()["triple"], frozenset())
    core.register("3", subscriptions()["reason"], frozenset())
    core.start("The farm makes 148 megawatts.", ENVELOPE["question"], 400, 0.0)
    answer = reply(triples(), "  148 megawatts\n", "3", 1, "mcp")
    assert isinstance(answer, DataEventPacket) and answer.tag == FINAL_ANSWER_TAG
    body = answer.payload
    assert (body.answer, body.method, body.candidates, body.facts_used, body.triples_seen) == (
        "148 megawatts", "external:mcp", ["148 megawatts"], 2, 1)  # fmt: skip
    assert answer.token_used is None  # its model's tokens are not known
    core.receive("2", adapter.encode(triples().to_dict()), 1.0)
    core.receive("3", adapter.encode(answer.to_dict()), 2.0)
    assert core.end is not None and core.end.status == "ok"
    assert core.final is not None and core.final.payload.answer == "148 megawatts"
    assert core.agents["3"].bytes_sent > 0 and core.agents["3"].bytes_received > 0


def test_a_workers_text_is_its_result_and_no_text_fails_the_stage() -> None:
    done = reply(subtask(), "1905", "5", 1, "a2a")
    assert isinstance(done, ResultPacket)
    assert (done.payload.status, done.payload.result_data, done.payload.worker_agent_role) == (
        "COMPLETED", "1905", "research")  # fmt: skip
    empty = reply(subtask(), " \n", "5", 2, "a2a")
    assert isinstance(empty, ResultPacket) and empty.payload.status == "FAILED"
    assert empty.payload.error_details is not None
    assert empty.payload.error_details.message == "the external agent (a2a) answered no text"
    lost = failure(triples(), "a2a: HTTP 500", "3", 3)
    assert (
        isinstance(lost, ErrorPacket)
        and lost.payload.error == "a2a: HTTP 500"
        and lost.payload.on == "triples"
    )


# --- MCP: which argument takes the text -----------------------------------------------------------
def test_the_mcp_tools_one_string_argument_takes_the_text() -> None:
    from gaiamesh.mesh.protocols.mcp.text import text_argument

    one = {"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]}
    assert text_argument("answer", one) == "question"
    optional_number = {
        "properties": {"q": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["q"],
    }
    assert text_argument("answer", optional_number) == "q"
    unrequired = {"properties": {"text": {"type": "string"}}}
    assert text_argument("answer", unrequired) == "text"
    for schema in ({"properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "required": ["a", "b"]},
                   {"properties": {"n": {"type": "integer"}}, "required": ["n"]}, {}):  # fmt: skip
        with pytest.raises(Undelivered, match="takes no single text argument"):
            text_argument("answer", schema)
