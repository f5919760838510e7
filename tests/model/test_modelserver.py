"""The bundled model server against the official ``ollama`` client, with the real model."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor

import httpx
import ollama
import pytest

pytestmark = pytest.mark.model
MODEL = "gemma3:270m"
OPTS = {"temperature": 0, "seed": 7, "num_predict": 12}


def test_list_show_ps_version_pull(live_model_server: str) -> None:
    c = ollama.Client(host=live_model_server)
    names = [m.model for m in c.list().models]
    assert names == [MODEL]
    show = c.show(MODEL)
    assert show.details.family == "gemma" and show.details.format == "gguf"
    assert c.ps().models[0].model == MODEL
    assert httpx.get(f"{live_model_server}/api/version").json()["version"]
    assert httpx.get(live_model_server).text == "Ollama is running"
    assert c.pull(MODEL).status == "success"
    statuses = [p.status for p in c.pull(MODEL, stream=True)]
    assert statuses[-1] == "success"
    with pytest.raises(ollama.ResponseError) as err:
        c.pull("llama3:70b")
    assert err.value.status_code == 404


def test_generate_non_streaming_reports_real_counts(live_model_server: str) -> None:
    c = ollama.Client(host=live_model_server)
    r = c.generate(model=MODEL, prompt="The capital of France is", options=OPTS)
    assert r.done and r.response.strip()
    assert r.prompt_eval_count == 6  # <bos> + 5 prompt tokens
    assert 1 <= r.eval_count <= 12
    assert r.total_duration >= r.prompt_eval_duration + r.eval_duration > 0


def test_num_predict_stop_and_seed_are_honoured(live_model_server: str) -> None:
    c = ollama.Client(host=live_model_server)
    long = c.generate(model=MODEL, prompt="Count: 1, 2, 3,", options={"temperature": 0, "num_predict": 5})
    assert long.eval_count == 5 and long.done_reason == "length"
    stopped = c.generate(
        model=MODEL, prompt="Count: 1, 2, 3,", options={"temperature": 0, "num_predict": 30, "stop": [","]}
    )
    assert "," not in stopped.response and stopped.done_reason == "stop"
    hot = {"temperature": 1.5, "num_predict": 16, "seed": 123}
    a = c.generate(model=MODEL, prompt="Once upon a time", options=hot).response
    b = c.generate(model=MODEL, prompt="Once upon a time", options=hot).response
    assert a == b


def test_generate_streaming_matches_non_streaming(live_model_server: str) -> None:
    c = ollama.Client(host=live_model_server)
    whole = c.generate(model=MODEL, prompt="The sky is", options=OPTS)
    chunks = list(c.generate(model=MODEL, prompt="The sky is", options=OPTS, stream=True))
    assert len(chunks) >= 2 and chunks[-1].done and not any(ch.done for ch in chunks[:-1])
    assert "".join(ch.response for ch in chunks) == whole.response
    assert chunks[-1].eval_count == whole.eval_count


def test_chat_streaming_has_role_on_every_chunk(live_model_server: str) -> None:
    c = ollama.Client(host=live_model_server)
    chunks = list(
        c.chat(model=MODEL, messages=[{"role": "user", "content": "Say hello."}], options=OPTS, stream=True)
    )
    assert all(ch.message.role == "assistant" for ch in chunks)
    assert chunks[-1].done and chunks[-1].eval_count >= 1
    r = c.chat(
        model=MODEL,
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Name a colour."}],
        options=OPTS,
    )
    assert r.message.role == "assistant" and r.prompt_eval_count > 5


async def test_async_client_and_concurrent_requests_queue_safely(live_model_server: str) -> None:
    c = ollama.AsyncClient(host=live_model_server)
    prompts = ["One, two,", "Red, green,", "Monday, Tuesday,"]
    results = await asyncio.gather(*(c.generate(model=MODEL, prompt=p, options=OPTS) for p in prompts))
    assert all(r.done and r.eval_count >= 1 for r in results)
    alone = await c.generate(model=MODEL, prompt=prompts[1], options=OPTS)
    assert alone.response == results[1].response  # concurrency does not mix contexts
    stream = await c.chat(
        model=MODEL, messages=[{"role": "user", "content": "Hi"}], options=OPTS, stream=True
    )
    roles = [ch.message.role async for ch in stream]
    assert roles and set(roles) == {"assistant"}


def test_errors_use_ollamas_shape(live_model_server: str) -> None:
    c = ollama.Client(host=live_model_server)
    with pytest.raises(ollama.ResponseError) as err:
        c.generate(model="nope:1b", prompt="hi")
    assert err.value.status_code == 404 and "model 'nope:1b' not found" in str(err.value)
    bad = httpx.post(
        f"{live_model_server}/api/generate", content=b"{broken", headers={"content-type": "application/json"}
    )
    assert bad.status_code == 400 and "error" in bad.json()
    missing = httpx.post(f"{live_model_server}/api/chat", json={"messages": []})
    assert missing.status_code == 400 and "model" in missing.json()["error"]
    empty = c.generate(model=MODEL, prompt="")
    assert empty.done and empty.done_reason == "load"


def test_score_ranks_the_models_own_continuation_first_and_is_order_free(live_model_server: str) -> None:
    """``/api/score`` (ours): the greedy continuation is likelier than other text, and a
    continuation's score does not depend on what was scored before it (the context is rolled
    back to the prompt's end between continuations)."""
    prompt = "Context: Anna Lind built the mill in 1820.\nQuestion: Who built the mill?\nAnswer:"
    # The model's top next token (greedy, no repeat penalty) is likelier than any continuation
    # that starts otherwise: a longer one only multiplies in more probabilities below one.
    greedy = ollama.Client(host=live_model_server).generate(
        model=MODEL, prompt=prompt, raw=True, options={"temperature": 0, "num_predict": 1, "repeat_penalty": 1.0}
    )
    first = greedy.response
    assert first.strip()
    others = [c for c in [" the river", " 1820", " Mill", " Anna Lind"] if not c.startswith(first)]

    def score(conts: list[str]) -> dict[str, float]:
        r = httpx.post(f"{live_model_server}/api/score", json={"model": MODEL, "prompt": prompt, "continuations": conts}, timeout=60)
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["prompt_eval_count"] > 10 and body["eval_count"] >= 1
        for s in body["scores"]:
            assert s["logprob"] == pytest.approx(sum(s["token_logprobs"])) and s["logprob"] < 0
        return {s["continuation"]: s["logprob"] for s in body["scores"]}

    forward = score([first, *others])
    assert forward[first] > max(forward[o] for o in others)
    backward = score([*reversed(others), first])
    for c, lp in forward.items():
        assert backward[c] == pytest.approx(lp, abs=1e-3)


def test_score_errors(live_model_server: str) -> None:
    url = f"{live_model_server}/api/score"
    unknown = httpx.post(url, json={"model": "nope:1b", "prompt": "hi", "continuations": ["x"]}, timeout=60)
    assert unknown.status_code == 404 and "model 'nope:1b' not found" in unknown.json()["error"]
    empty = httpx.post(url, json={"model": MODEL, "prompt": "hi", "continuations": [""]})
    assert empty.status_code == 400 and "non-empty" in empty.json()["error"]
    none = httpx.post(url, json={"model": MODEL, "prompt": "hi", "continuations": []})
    assert none.status_code == 400 and "continuations" in none.json()["error"]
    huge = httpx.post(url, json={"model": MODEL, "prompt": "word " * 5000, "continuations": ["x"]}, timeout=60)
    assert huge.status_code == 400 and "the context holds" in huge.json()["error"]


def test_format_holds_generate_and_chat_to_a_schema_and_refuses_what_would_crash(live_model_server: str) -> None:
    """Ollama's ``format`` through the official client: JSON that follows the schema, on both
    routes; a schema whose grammar llama.cpp cannot hold is a 400 in our words, and the server
    goes on answering."""
    schema = {"type": "object", "properties": {"year": {"type": "integer", "minimum": 1000, "maximum": 2100}},
              "required": ["year"], "additionalProperties": False}  # fmt: skip
    c = ollama.Client(host=live_model_server)
    got = c.generate(model=MODEL, prompt="The bridge opened in 1931. As JSON:", format=schema, raw=True,
                     options={"temperature": 0, "num_predict": 24})  # fmt: skip
    assert set(json.loads(got.response)) == {"year"}
    chat = c.chat(model=MODEL, messages=[{"role": "user", "content": "When did the bridge open? (1931)"}],
                  format=schema, options={"temperature": 0, "num_predict": 24})  # fmt: skip
    assert isinstance(json.loads(chat.message.content or "")["year"], int)
    with pytest.raises(ollama.ResponseError) as err:
        c.generate(model=MODEL, prompt="x", format={"type": "string", "maxLength": 200_000}, raw=True)
    assert err.value.status_code == 400 and "a length bound of 200000" in str(err.value)
    assert c.generate(model=MODEL, prompt="Hello", raw=True, options={"num_predict": 2}).done  # still serving


def test_held_output_is_what_llama_cpp_python_writes_under_the_same_grammar(live_model_server: str) -> None:
    """The server draws a held token as llama.cpp's own server does (the grammar asked only
    about the token drawn, the whole vocabulary filtered where it refuses it): under greedy
    decoding that is the very output of llama-cpp-python's grammar in the sampler chain. The
    prompts make the grammar refuse the model's first choice (a space before the brace) and
    choose among given values."""
    import llama_cpp

    from gaiamesh.models.modelserver import bundled_model_path
    from gaiamesh.models.modelserver.constrained import schema_grammar

    schemas = [
        {"type": "object", "properties": {"subject": {"type": "string", "maxLength": 40},
                                          "object": {"type": "string", "maxLength": 40}},
         "required": ["subject", "object"]},
        {"type": "object", "properties": {"answer": {"enum": ["41,000 homes", "148 megawatts", "11 kilometres"]}},
         "required": ["answer"]},
    ]  # fmt: skip
    prompt = ("The plant can deliver 148 megawatts, enough for about 41,000 homes, 11 kilometres from town.\n"
              "Question: How much power can the plant deliver?\nAs JSON:")  # fmt: skip
    theirs = llama_cpp.Llama(model_path=str(bundled_model_path()), n_ctx=1024, n_threads=1, verbose=False)
    c = ollama.Client(host=live_model_server)
    for schema in schemas:
        ours = c.generate(model=MODEL, prompt=prompt, format=schema, raw=True,
                          options={"temperature": 0, "num_predict": 40, "repeat_penalty": 1.1})  # fmt: skip
        grammar = llama_cpp.LlamaGrammar.from_string(schema_grammar(schema), verbose=False)
        done = theirs.create_completion(prompt, max_tokens=40, temperature=0, repeat_penalty=1.1, grammar=grammar)
        assert ours.response == done["choices"][0]["text"]  # type: ignore[index]
        json.loads(ours.response)


def test_the_memo_answers_a_repeated_request_from_memory(model_server: str, live_model_server: str) -> None:
    """MODEL_MEMO=on (the suite's ``model_server``): a request answered before comes back from
    memory, the model's text and counts with the first answer's durations; the same request
    to a server without it is computed each time (durations of its own), to the same text."""
    memo, live = ollama.Client(host=model_server), ollama.Client(host=live_model_server)
    prompt = "The ferry to the northern islands leaves from"
    first, again = (memo.generate(model=MODEL, prompt=prompt, options=OPTS) for _ in range(2))
    assert (again.response, again.eval_count, again.prompt_eval_duration, again.eval_duration) == (
        first.response, first.eval_count, first.prompt_eval_duration, first.eval_duration)  # fmt: skip
    computed = [live.generate(model=MODEL, prompt=prompt, options=OPTS) for _ in range(2)]
    assert computed[0].response == computed[1].response == first.response
    assert computed[0].eval_duration != computed[1].eval_duration
    # sampling that is not fixed (no seed, a temperature) is never answered from memory
    hot = {"temperature": 1.0, "num_predict": 12}
    a, b = (memo.generate(model=MODEL, prompt=prompt, options=hot) for _ in range(2))
    assert a.eval_duration != b.eval_duration
    # the same request twice at once: the second, queued behind the first, is answered from memory
    at_once = "The night train to the southern coast stops at"
    with ThreadPoolExecutor(2) as pool:
        pair = list(pool.map(lambda _: memo.generate(model=MODEL, prompt=at_once, options=OPTS), range(2)))
    assert pair[0].response == pair[1].response and pair[0].eval_duration == pair[1].eval_duration
    body = {"model": MODEL, "prompt": "Halden Bridge is 412 metres", "continuations": [" long", " wide"]}
    scored = [httpx.post(f"{model_server}/api/score", json=body, timeout=60).json() for _ in range(2)]
    assert scored[0] == {**scored[1], "created_at": scored[0]["created_at"]}
