"""Generation held to a grammar, as fast as free generation where the model already agrees.

llama-cpp-python puts the grammar in the sampler chain, so every token checks the whole
vocabulary against it: 262,144 entries for Gemma 3, about 100 ms a token here against 15 ms
free. llama.cpp's own server (``common_sampler_sample``) samples first and asks the grammar
only about the token it drew; where the grammar refuses it, the grammar filters the whole
vocabulary and the token is drawn again. That draws from exactly the grammar's distribution
(a token the grammar allows is kept with its own probability; the rest of the mass is drawn
again among the allowed ones), and under greedy decoding it picks the same token: it is the
same output, only faster. This module does the same with llama.cpp's sampler API.
"""

from __future__ import annotations

import ctypes
import json
from collections.abc import Iterator, Sequence
from typing import Any

import llama_cpp
import numpy as np
from llama_cpp import llama_grammar

# llama-cpp-python's converter lets a JSON string hold raw control characters (a newline inside
# a string is then not JSON: its issue 1259); llama.cpp's own converter has refused them since
# its pull request 5888. The same rule, written as llama.cpp writes it.
_LOOSE_CHAR = 'char ::= [^"\\\\]'
_JSON_CHAR = 'char ::= [^"\\\\\\x7F\\x00-\\x1F]'


def schema_grammar(schema: dict[str, Any]) -> str:
    """The GBNF grammar of a JSON schema, as llama-cpp-python converts it (in the schema's
    own property order), with JSON's own string characters."""
    gbnf = llama_grammar.json_schema_to_gbnf(json.dumps(schema))
    if _LOOSE_CHAR not in gbnf and "char ::=" in gbnf:
        raise ValueError("llama-cpp-python's grammar of a JSON string changed: check _LOOSE_CHAR")
    return gbnf.replace(_LOOSE_CHAR, _JSON_CHAR)


# llama_token_data, as numpy sees it: the whole vocabulary is filled in one copy per token.
TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])


class GrammarSampler:
    """Tokens of one completion of ``llm`` held to ``grammar``, sampled by ``chain`` (the same
    sampler chain free generation uses, without the grammar)."""

    def __init__(self, llm: llama_cpp.Llama, grammar: llama_cpp.LlamaGrammar, chain: Any) -> None:
        self.llm = llm
        self.chain = chain  # a llama_cpp._internals.LlamaSampler
        self.grammar = llama_cpp.llama_sampler_init_grammar(
            llm._model.vocab, grammar._grammar.encode(), grammar._root.encode()
        )
        n_vocab = llm.n_vocab()
        self.ids = np.arange(n_vocab, dtype=np.int32)
        self.vocab = np.zeros(n_vocab, dtype=TOKEN_DATA)
        self.one = np.zeros(1, dtype=TOKEN_DATA)

    def close(self) -> None:
        llama_cpp.llama_sampler_free(self.grammar)

    def tokens(self, prompt: Sequence[int]) -> Iterator[int]:
        """Evaluate ``prompt`` (on a reset context), then yield token after token until the
        caller stops asking."""
        self.llm.eval(list(prompt))
        while True:
            token = self._next()
            llama_cpp.llama_sampler_accept(self.grammar, token)
            llama_cpp.llama_sampler_accept(self.chain.sampler, token)
            yield token
            self.llm.eval([token])

    def _next(self) -> int:
        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(self.llm._ctx.ctx, -1), shape=(len(self.vocab),))
        token = self._draw(logits, with_grammar=False)
        self.one["id"], self.one["logit"], self.one["p"] = token, 0.0, 0.0
        if np.isfinite(self._apply(self.grammar, self.one)["logit"][0]):
            return token
        return self._draw(logits, with_grammar=True)  # refused: the grammar filters, then draw again

    def _draw(self, logits: np.ndarray, with_grammar: bool) -> int:
        # the samplers sort the array in place: every draw starts from the vocabulary in order
        self.vocab["id"], self.vocab["logit"], self.vocab["p"] = self.ids, logits, 0.0
        cur = self._array(self.vocab)
        if with_grammar:
            llama_cpp.llama_sampler_apply(self.grammar, ctypes.byref(cur))
        llama_cpp.llama_sampler_apply(self.chain.sampler, ctypes.byref(cur))
        return int(cur.data[cur.selected].id)

    def _apply(self, sampler: Any, data: np.ndarray) -> np.ndarray:
        cur = self._array(data)
        llama_cpp.llama_sampler_apply(sampler, ctypes.byref(cur))
        return data

    @staticmethod
    def _array(data: np.ndarray) -> llama_cpp.llama_token_data_array:
        return llama_cpp.llama_token_data_array(
            data=data.ctypes.data_as(llama_cpp.llama_token_data_p), size=len(data), selected=-1, sorted=False
        )
