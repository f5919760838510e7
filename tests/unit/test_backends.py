"""The backends' own decisions, by plain calls (the servers answer them in tests/e2e/test_backends.py)."""

from __future__ import annotations

import pytest

from gaiamesh.errors import ConfigError
from gaiamesh.mesh.frames import Announcement
from gaiamesh.models.backends.ollama import kind_of
from gaiamesh.models.backends.openai_compat import continuation_logprob
from gaiamesh.models.llm import LLMClient, LLMUsage
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
