"""The inference engine behind the model server: one llama.cpp context, one request at a time.

Token-level generation (``Llama.generate``) gives exact ``prompt_eval_count``/``eval_count``
and real durations; stop strings and UTF-8 boundaries are handled here.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import llama_cpp
import numpy as np
from llama_cpp import llama_grammar

from .constrained import GrammarSampler, schema_grammar

GRAMMAR_MAX_BOUND = 256  # longest maxLength / maxItems a schema's grammar may unroll


def _longest_bound(node: Any) -> int:
    """The largest ``maxLength`` or ``maxItems`` anywhere in a JSON schema (0 if none)."""
    if isinstance(node, dict):
        own = [v for k, v in node.items() if k in ("maxLength", "maxItems") and isinstance(v, int)]
        return max([*own, *(_longest_bound(v) for v in node.values())], default=0)
    if isinstance(node, list):
        return max((_longest_bound(v) for v in node), default=0)
    return 0


@dataclass
class GenOptions:
    """The Ollama ``options`` the engine honours."""

    temperature: float = 0.8
    top_k: int = 40
    top_p: float = 0.9
    min_p: float = 0.0
    repeat_penalty: float = 1.1
    num_predict: int = -1
    stop: list[str] = field(default_factory=list)
    seed: int | None = None
    # Ollama's ``format``: "json", or a JSON schema the output must follow (a llama.cpp grammar).
    format: str | dict[str, Any] | None = None

    @classmethod
    def from_ollama(cls, options: dict[str, Any] | None, format: str | dict[str, Any] | None = None) -> GenOptions:
        o = options or {}
        stop = o.get("stop") or []
        return cls(
            temperature=float(o.get("temperature", 0.8)),
            top_k=int(o.get("top_k", 40)),
            top_p=float(o.get("top_p", 0.9)),
            min_p=float(o.get("min_p", 0.0)),
            repeat_penalty=float(o.get("repeat_penalty", 1.1)),
            num_predict=int(o.get("num_predict", -1)),
            stop=[stop] if isinstance(stop, str) else [str(s) for s in stop],
            seed=None if o.get("seed") is None else int(o["seed"]),
            format=format or None,
        )


@dataclass
class Piece:
    """A streamed piece of text; the last one has ``done=True`` and the counts."""

    text: str
    done: bool = False
    done_reason: str | None = None
    prompt_eval_count: int = 0
    eval_count: int = 0
    prompt_eval_duration: int = 0
    eval_duration: int = 0
    load_duration: int = 0
    total_duration: int = 0


@dataclass
class Scores:
    """Per-token log-probabilities of each scored continuation, and the work it took."""

    token_logprobs: list[list[float]]
    prompt_eval_count: int
    eval_count: int
    total_duration: int
    load_duration: int = 0


def _memo_key(prompt: str, opts: GenOptions) -> str | None:
    """The key of a generation the memo may keep: only one whose sampling is fixed (temperature 0
    or a seed), which the same request would make again token for token (every prompt is read
    from a reset context: see :meth:`Engine._generate`)."""
    if opts.temperature > 0 and opts.seed is None:
        return None
    return json.dumps([prompt, asdict(opts)], sort_keys=True)


class Engine:
    """Loads the GGUF once and serves generations one at a time (llama.cpp is not re-entrant).

    With ``memo`` (MODEL_MEMO=on; off by default) a request the engine has answered since it
    started is answered again from memory: the same text, counts and durations, with no model
    time. The test suites use it where the model's answers matter but its time does not; a bench
    must not (its model times would be the first request's)."""

    def __init__(self, model_path: Path, n_ctx: int = 4096, n_threads: int = 2, memo: bool = False) -> None:
        started = time.perf_counter_ns()
        self.model_path = model_path
        # n_threads_batch too: llama-cpp-python gives a prompt's evaluation every core otherwise,
        # and MODEL_THREADS=1 beside other work still spun a second thread at its barriers
        self.llm = llama_cpp.Llama(
            model_path=str(model_path), n_ctx=n_ctx, n_threads=n_threads, n_threads_batch=n_threads, n_batch=512,
            verbose=False,
        )
        self.load_ns = time.perf_counter_ns() - started
        self.n_ctx = n_ctx
        self.size = model_path.stat().st_size
        self._lock = asyncio.Lock()
        self._first = True
        self.last_used = time.time()
        self._grammars: dict[str, llama_cpp.LlamaGrammar] = {}
        self.memo: dict[str, list[Piece] | Scores] | None = {} if memo else None
        self.memo_hits = 0

    def count_tokens(self, prompt: str) -> int:
        return len(self.llm.tokenize(prompt.encode(), add_bos=True, special=True))

    def _generate(self, prompt: str, opts: GenOptions, emit: Any, cancel: threading.Event) -> None:
        """Runs in a worker thread; ``emit(piece)`` hands each piece to the event loop."""
        t0 = time.perf_counter_ns()
        tokens = self.llm.tokenize(prompt.encode(), add_bos=True, special=True)
        if len(tokens) >= self.n_ctx:
            raise ValueError(f"prompt is {len(tokens)} tokens, the context holds {self.n_ctx}")
        budget = self.n_ctx - len(tokens)
        limit = budget if opts.num_predict < 0 else min(opts.num_predict, budget)
        # Evaluate every prompt from scratch: reusing a KV-cache prefix (with Gemma 3's sliding-window
        # cache) changes the logits slightly, which made seeded sampling depend on the previous request.
        self.llm.reset()
        self.llm.set_seed(opts.seed if opts.seed is not None else int(time.time_ns() & 0xFFFFFFFF))
        vocab = self.llm._model.vocab
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        out: list[int] = []
        pending = ""
        reason = "length"
        first_ns: int | None = None
        hold = max((len(s) for s in opts.stop), default=0)
        if limit > 0:
            for tok in self._tokens(tokens, opts):
                if first_ns is None:
                    first_ns = time.perf_counter_ns()
                if llama_cpp.llama_vocab_is_eog(vocab, tok):
                    reason = "stop"
                    break
                out.append(tok)
                pending += decoder.decode(self.llm.detokenize([tok], prev_tokens=tokens + out[:-1]))
                hit = min((pending.find(s) for s in opts.stop if s and s in pending), default=-1)
                if hit >= 0:
                    pending = pending[:hit]
                    reason = "stop"
                    break
                # Hold back a tail that could still grow into a stop string.
                if len(pending) > hold:
                    cut = len(pending) - hold
                    emit(Piece(pending[:cut]))
                    pending = pending[cut:]
                if cancel.is_set() or len(out) >= limit:
                    break
        end = time.perf_counter_ns()
        first = first_ns or end
        load = self.load_ns if self._first else 0
        self._first = False
        emit(
            Piece(
                pending,
                done=True,
                done_reason=reason,
                prompt_eval_count=len(tokens),
                eval_count=len(out),
                prompt_eval_duration=first - t0,
                eval_duration=end - first,
                load_duration=load,
                total_duration=end - t0 + load,
            )
        )

    def _tokens(self, tokens: list[int], opts: GenOptions) -> Iterator[int]:
        """The completion's tokens: llama-cpp-python's own generation, or, held to a grammar,
        drawn as llama.cpp's server draws them (see ``constrained``)."""
        sampling: dict[str, Any] = {"top_k": opts.top_k, "top_p": opts.top_p, "min_p": opts.min_p, "temp": opts.temperature,
                    "repeat_penalty": opts.repeat_penalty}  # fmt: skip
        grammar = self._grammar(opts.format)
        if grammar is None:
            yield from self.llm.generate(tokens, reset=True, **sampling)
            return
        sampler = GrammarSampler(self.llm, grammar, self.llm._init_sampler(**sampling))
        try:
            yield from sampler.tokens(tokens)
        finally:
            sampler.close()

    def _grammar(self, format: str | dict[str, Any] | None) -> llama_cpp.LlamaGrammar | None:
        """The grammar that holds output to ``format`` (built once per schema; None: free text).
        A schema llama.cpp cannot turn into a grammar raises ValueError (a 400)."""
        if not format:
            return None
        longest = _longest_bound(format)
        if longest > GRAMMAR_MAX_BOUND:
            # llama-cpp-python unrolls a bound into nested optionals, and a deep one crashes
            # llama.cpp's grammar parser: refuse it rather than lose the server.
            raise ValueError(f"format: a length bound of {longest} is more than a grammar here can hold "
                             f"(at most {GRAMMAR_MAX_BOUND}); leave it out and check the output after")  # fmt: skip
        key = format if isinstance(format, str) else json.dumps(format, sort_keys=True)
        if key not in self._grammars:
            try:
                if format == "json":
                    self._grammars[key] = llama_cpp.LlamaGrammar.from_string(llama_grammar.JSON_GBNF, verbose=False)
                elif isinstance(format, dict):
                    # the schema as written: its property order is the order the model writes them in
                    self._grammars[key] = llama_cpp.LlamaGrammar.from_string(schema_grammar(format), verbose=False)
                else:
                    raise ValueError(f"format must be \"json\" or a JSON schema, not {format!r}")
            except (RuntimeError, KeyError, TypeError, IndexError) as exc:
                raise ValueError(f"format: llama.cpp cannot build a grammar from this schema: {exc}") from exc
        return self._grammars[key]

    def _logprobs(self, i: int) -> np.ndarray:
        """Log-probabilities of the token after batch position ``i`` of the last decode."""
        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(self.llm._ctx.ctx, i), shape=(self.llm.n_vocab(),))
        top = float(logits.max())
        return logits - (top + float(np.log(np.exp(logits - top).sum())))

    def _score(self, prompt: str, continuations: list[str]) -> Scores:
        """Log-probability of each continuation's tokens right after ``prompt``: one pass over
        the prompt, then each continuation as one batch from the prompt's end (the cache is cut
        back to the prompt between them, so each is scored as if alone)."""
        t0 = time.perf_counter_ns()
        tokens = self.llm.tokenize(prompt.encode(), add_bos=True, special=True)
        pieces = [self.llm.tokenize(c.encode(), add_bos=False, special=False) for c in continuations]
        longest = max((len(p) for p in pieces), default=0)
        if len(tokens) + longest >= self.n_ctx:
            raise ValueError(
                f"prompt and continuation are {len(tokens) + longest} tokens, the context holds {self.n_ctx}"
            )
        if longest > self.llm.n_batch:
            raise ValueError(f"a continuation is {longest} tokens, at most {self.llm.n_batch} are scored")
        self.llm.reset()
        self.llm.eval(tokens)
        first = self._logprobs(-1)
        ctx, batch, n = self.llm._ctx, self.llm._batch, len(tokens)
        out: list[list[float]] = []
        evaluated = 0
        for piece in pieces:
            values = [float(first[piece[0]])]
            if len(piece) > 1:
                ctx.kv_cache_seq_rm(-1, n, -1)
                batch.set_batch(batch=piece[:-1], n_past=n, logits_all=True)
                ctx.decode(batch)
                evaluated += len(piece) - 1
                values += [float(self._logprobs(k)[tok]) for k, tok in enumerate(piece[1:])]
            out.append(values)
        load = self.load_ns if self._first else 0
        self._first = False
        return Scores(
            token_logprobs=out,
            prompt_eval_count=len(tokens),
            eval_count=evaluated,
            total_duration=time.perf_counter_ns() - t0 + load,
            load_duration=load,
        )

    async def score(self, prompt: str, continuations: list[str]) -> Scores:
        """Score continuations of ``prompt`` (see :meth:`_score`); requests queue on one lock."""
        key = json.dumps(["score", prompt, continuations])
        if isinstance(known := self._known(key), Scores):
            return known
        async with self._lock:
            if isinstance(known := self._known(key), Scores):  # answered while this request queued
                return known
            try:
                got = await asyncio.get_running_loop().run_in_executor(None, self._score, prompt, continuations)
            finally:
                self.last_used = time.time()
            if self.memo is not None:  # kept before the lock is let go, for the request queued behind
                self.memo[key] = replace(got, load_duration=0, total_duration=got.total_duration - got.load_duration)
        return got

    async def stream(self, prompt: str, opts: GenOptions) -> AsyncIterator[Piece]:
        """Generate, yielding pieces as they come; requests queue on one lock. A generation the
        memo holds is yielded from it (see the class)."""
        key = _memo_key(prompt, opts) if self.memo is not None else None
        if isinstance(known := self._known(key), list):
            for piece in known:
                yield piece
            return
        async with self._lock:
            # A request queued behind the same one is answered from memory too: the suite's
            # workers ask the same questions at once, and each was computed again.
            if isinstance(known := self._known(key), list):
                for piece in known:
                    yield piece
                return
            pieces: list[Piece] = []
            async for piece in self._stream(prompt, opts):
                pieces.append(piece)
                if piece.done and key is not None and self.memo is not None:
                    # kept whole only (a client that left mid-way keeps nothing); the model's
                    # load is the first request's alone
                    last = replace(piece, load_duration=0, total_duration=piece.total_duration - piece.load_duration)
                    self.memo[key] = [*pieces[:-1], last]
                yield piece

    def _known(self, key: str | None) -> list[Piece] | Scores | None:
        """The memo's answer to ``key``, counted as a hit; None without a memo or an answer."""
        if key is None or self.memo is None or (known := self.memo.get(key)) is None:
            return None
        self.memo_hits += 1
        return known

    async def _stream(self, prompt: str, opts: GenOptions) -> AsyncIterator[Piece]:
        """One generation; the caller holds the lock."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Piece | BaseException] = asyncio.Queue()
        cancel = threading.Event()

        def emit(item: Piece | BaseException) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, item)

        def work() -> None:
            try:
                self._generate(prompt, opts, emit, cancel)
            except Exception as exc:  # handed to the request, which turns it into an Ollama error
                emit(exc)

        worker = loop.run_in_executor(None, work)
        try:
            while True:
                item = await queue.get()
                if isinstance(item, BaseException):
                    raise item
                yield item
                if item.done:
                    break
        finally:
            cancel.set()  # a client that went away stops the generation
            with contextlib.suppress(Exception):
                await worker
            self.last_used = time.time()
