"""The backends' own decisions, by plain calls (the servers answer them in tests/e2e/test_backends.py)."""

from __future__ import annotations

import pytest

from gaiamesh.errors import ConfigError, FrameError
from gaiamesh.mesh.frames import Announcement
from gaiamesh.models.backends.ollama import kind_of
from gaiamesh.models.backends.openai_compat import continuation_logprob
from gaiamesh.models.llm import AnswerChoice, LLMClient, LLMUsage, ScoringCost, decide_answer_choice
from gaiamesh.models.prompts import Prompt, answer_prompt, parse_triple, triple_prompt
from gaiamesh.settings import ModelSettings, load_settings


def test_the_template_tells_a_base_model_from_a_chat_model() -> None:
    assert kind_of("{{ .Prompt }}") == kind_of("") == kind_of(None) == "base"
    assert kind_of("{{- range .Messages }}<start_of_turn>{{ .Role }}\n{{ .Content }}{{ end }}") == "chat"


def test_a_continuation_is_the_tokens_that_begin_inside_it() -> None:
    # "Q: A:" + " Ann Lee\n": tokens at 0, 2, 4 are the prompt's; 5 and 9 the continuation's; 14 generated
    offsets, logprobs = [0, 2, 4, 5, 9, 14], [None, -1.0, -0.5, -2.0, -0.25, -9.0]
    assert continuation_logprob(5, 9, offsets, logprobs) == -2.25
    assert continuation_logprob(5, 9, [0, 2], [None, -1.0]) is None  # nothing of it came back


def test_every_prompt_has_both_forms_and_a_chat_triple_parses() -> None:
    p = answer_prompt("The bridge is 412 metres long.", " How long is it? ")
    assert p.text.endswith("Question: How long is it?\nAnswer:") and p.user.endswith("Question: How long is it?")
    assert p.system and p.messages()[0]["role"] == "system"
    t = triple_prompt("Ann Lee founded the mill.")
    assert t.text.endswith("Triple: (") and "Triple" not in t.user
    assert parse_triple("Ann Lee | founded | the mill)") == parse_triple("(Ann Lee | founded | the mill)") == (
        "Ann Lee", "founded", "the mill")  # fmt: skip
    assert Prompt.plain("x").messages()[1] == {"role": "user", "content": "x"}


def test_a_call_without_counts_is_counted_as_unknown_not_as_zero() -> None:
    usage = LLMUsage()
    usage.count(0.0, 12, 3)
    usage.count(0.0, None, None)
    assert (usage.calls, usage.tokens, usage.uncounted) == (2, 15, 1)


def test_the_announcement_carries_the_backend_and_kind() -> None:
    said = Announcement(node_id="3", tool="reason", consumes=frozenset({"triples"}), backend="openai", model_kind="chat",
                        schemas=True)  # fmt: skip
    back = Announcement.from_headers(said.headers())
    assert back is not None and (back.backend, back.model_kind, back.schemas) == ("openai", "chat", True)
    plain = Announcement.from_headers(Announcement(node_id="3", tool="reason", consumes=frozenset()).headers())
    assert plain is not None and plain.backend == "" and not plain.schemas


def test_the_openai_backend_needs_its_url_and_keeps_its_key_out_of_the_archive() -> None:
    with pytest.raises(ConfigError, match="OPENAI_BASE_URL"):
        LLMClient.from_settings(ModelSettings(llm_backend="openai"))
    s = load_settings(llm_backend="openai", openai_base_url="http://127.0.0.1:1/v1", openai_api_key="sk-secret")
    assert LLMClient.from_settings(s).backend.name == "openai"
    assert "openai_api_key" not in s.public_dict() and "sk-secret" not in str(s.public_dict())


def test_auto_weighs_what_a_scored_passage_costs() -> None:
    server = "openai server at http://127.0.0.1:8000/v1"
    slow, fast = ScoringCost(3500.0, 10), ScoringCost(40.0, 10)  # 22,400 and 256 ms a passage of 64 tokens
    assert (slow.passage_ms, fast.passage_ms) == (22400.0, 256.0)
    over = decide_answer_choice("auto", slow, 5000, server)
    assert (over.choice, over.passage_ms) == ("weights", 22400.0)
    assert "22,400 ms" in over.why and "over SCORE_BUDGET_MS=5000" in over.why and server in over.why
    within = decide_answer_choice("auto", fast, 5000, server)
    assert within.choice == "likelihood" and "within SCORE_BUDGET_MS=5000" in within.why
    # likelihood named by the user holds whatever it costs; weights probes nothing
    assert decide_answer_choice("likelihood", slow, 5000, server).choice == "likelihood"
    assert decide_answer_choice("weights", None, 5000, server) == AnswerChoice("weights", None, "ANSWER_CHOICE=weights")
    cannot = decide_answer_choice("auto", None, 5000, server)
    assert cannot.choice == "weights" and "gives no log-probabilities" in cannot.why
    replayed = decide_answer_choice("auto", ScoringCost(0.0, 1, how="recorded"), 5000, "replay server")
    assert replayed.choice == "likelihood" and replayed.passage_ms is None
    # a backend that scores in one pass by construction (our /api/score) is not judged by a time
    # that would measure the machine's load: a stalled probe is recorded, and likelihood kept
    ours = decide_answer_choice("auto", ScoringCost(3500.0, 4, how="native"), 5000, "ollama server at h")
    assert ours.choice == "likelihood" and ours.passage_ms == 56000.0 and "in one pass" in ours.why


def test_the_announcement_carries_the_answer_choice_and_refuses_one_it_cannot_read() -> None:
    said = Announcement(node_id="3", tool="reason", consumes=frozenset({"triples"}), answer_choice="weights",
                        passage_ms=44800.5, answer_choice_why="ANSWER_CHOICE=auto: over")  # fmt: skip
    assert Announcement.from_headers(said.headers()) == said
    bad = {**said.headers(), "X-Gaiamesh-Scored-Passage-Ms": "soon"}
    with pytest.raises(FrameError, match="agent '3' announces passage_ms='soon'"):
        Announcement.from_headers(bad)
