"""``gaiamesh bench-grammar``: output held to a schema, drawn two ways on the same model, prompts
and grammars, side by side in one process: llama-cpp-python's grammar in the sampler chain
(every token of the vocabulary checked at every step) and the bundled server's draw-first
sampler (``modelserver.constrained``: the grammar asked only about the token drawn)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import llama_cpp

from ...models.modelserver import bundled_model_path
from ...models.modelserver.constrained import GrammarSampler, schema_grammar
from ...models.prompts import TRIPLE_SCHEMA, answer_prompt, answer_schema, triple_prompt
from ...orchestrated.plan import plan_schema
from ...orchestrated.plan_tools import PLAN_TOOLS
from ...orchestrated.planner import plan_prompt

MAX_TOKENS = 160
SAMPLING: dict[str, Any] = {"temp": 0.0, "repeat_penalty": 1.1, "top_k": 40, "top_p": 0.9, "min_p": 0.0}
CONTEXT = ("The Aske choir was founded by Ida Venn in 1921 and first sang in the parish hall of Tarnby. "
           "By 1950 it had 64 members; its conductor from 1962, Olaf Brun, took it on tour in 1971.")  # fmt: skip


def cases() -> list[tuple[str, dict[str, Any], str]]:
    """(name, schema, prompt): a typed answer, a triple and a plan, as the agents ask for them."""
    return [
        ("typed answer", answer_schema(), answer_prompt(CONTEXT, "How many members did the choir have in 1950?", True).text),
        ("triple", TRIPLE_SCHEMA, triple_prompt(CONTEXT.split(". ")[0] + ".", structured=True).text),
        ("plan", plan_schema(PLAN_TOOLS), plan_prompt("How many years after its founding did the choir tour?", PLAN_TOOLS, schema=True)),
    ]


Draw = Callable[[llama_cpp.Llama, list[int], llama_cpp.LlamaGrammar], list[int]]


def _timed(draw: Draw, llm: llama_cpp.Llama, prompt: list[int], grammar: llama_cpp.LlamaGrammar) -> tuple[list[int], float]:
    started = time.perf_counter()
    tokens = draw(llm, prompt, grammar)
    return tokens, (time.perf_counter() - started) * 1000


def _in_chain(llm: llama_cpp.Llama, prompt: list[int], grammar: llama_cpp.LlamaGrammar) -> list[int]:
    out: list[int] = []
    llm.reset()  # no prompt cache from the run before: both ways evaluate the whole prompt
    for token in llm.generate(prompt, reset=True, grammar=grammar, **SAMPLING):
        if llama_cpp.llama_vocab_is_eog(llm._model.vocab, token) or len(out) >= MAX_TOKENS:
            break
        out.append(token)
    return out


def _draw_first(llm: llama_cpp.Llama, prompt: list[int], grammar: llama_cpp.LlamaGrammar) -> list[int]:
    llm.reset()
    sampler = GrammarSampler(llm, grammar, llm._init_sampler(**SAMPLING))
    out: list[int] = []
    try:
        for token in sampler.tokens(prompt):
            if llama_cpp.llama_vocab_is_eog(llm._model.vocab, token) or len(out) >= MAX_TOKENS:
                break
            out.append(token)
    finally:
        sampler.close()
    return out


def run_grammar_bench(
    out: Path, repeat: int, threads: int = 2, progress: Callable[[str], None] = print
) -> list[dict[str, Any]]:
    """Each case ``repeat`` times each way (alternating), on ``threads`` threads (MODEL_THREADS);
    medians, and whether the outputs agree."""
    llm = llama_cpp.Llama(model_path=str(bundled_model_path()), n_ctx=4096, n_threads=threads, verbose=False)
    rows = []
    for name, schema, text in cases():
        grammar = llama_cpp.LlamaGrammar.from_string(schema_grammar(schema), verbose=False)
        prompt = llm.tokenize(text.encode(), add_bos=True, special=True)
        chain_ms, first_ms, same = [], [], True
        for _ in range(repeat):
            theirs, t_ms = _timed(_in_chain, llm, prompt, grammar)
            ours, o_ms = _timed(_draw_first, llm, prompt, grammar)
            chain_ms.append(t_ms)
            first_ms.append(o_ms)
            same = same and theirs == ours
        med_chain, med_first = sorted(chain_ms)[len(chain_ms) // 2], sorted(first_ms)[len(first_ms) // 2]
        rows.append({"case": name, "prompt_tokens": len(prompt), "tokens": len(ours), "in_chain_ms": round(med_chain, 1),
                     "draw_first_ms": round(med_first, 1), "speed_up": round(med_chain / med_first, 2), "same_output": same})  # fmt: skip
        progress(f"{name}: {len(ours)} tokens, in chain {med_chain:.0f} ms, draw first {med_first:.0f} ms, same: {same}")
    out.mkdir(parents=True, exist_ok=True)
    (out / "grammar.json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return rows
