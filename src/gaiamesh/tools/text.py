"""Text helpers shared by the retrieval tools: tokens, sentences, BM25 ranking."""

from __future__ import annotations

import re

from rank_bm25 import BM25Okapi

STOPWORDS = frozenset(
    """a an the of in on at to for from by with and or but is are was were be been being it its this that
    these those as what which who whom whose when where why how did do does done has have had not no
    than then there their they them he she his her we our you your i me my into over under about after
    before during between many much more most some any all each""".split()
)
_WORD = re.compile(r"[a-z0-9]+(?:[.,][0-9]+)*")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[A-Z0-9\"'(\[])")
_ABBREV = re.compile(
    r"(?:\b(?:Dr|Mr|Mrs|Ms|Prof|St|Mt|Jr|Sr|No|Capt|Gen|Col|Lt|Sgt|Rev|Fr|Co|Inc|Ltd|vs|approx)|\b[A-Z])\.$"
)


def stem(word: str) -> str:
    """A light suffix stripper: enough to match 'built'/'builds', 'opened'/'opening'."""
    for suffix in ("ingly", "edly", "ing", "ies", "ied", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + ("y" if suffix in ("ies", "ied") else "")
    return word


def terms(text: str) -> list[str]:
    """Content terms of ``text``: lower-cased, stop words removed, stemmed."""
    return [stem(w) for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


def sentences(text: str) -> list[str]:
    """Split prose into sentences (keeps abbreviations like 'U.S.' mostly intact)."""
    flat = " ".join(text.split())
    out: list[str] = []
    for piece in _SENTENCE_END.split(flat):
        piece = piece.strip()
        if not piece:
            continue
        if out and _ABBREV.search(out[-1]):
            out[-1] = f"{out[-1]} {piece}"  # "Dr. Rupert Ashcombe" is one sentence
        else:
            out.append(piece)
    return out


def rank(query: str, docs: list[str]) -> list[tuple[int, float]]:
    """BM25 scores of ``docs`` for ``query``, best first, as ``(index, score)``."""
    if not docs:
        return []
    corpus = [terms(d) or ["_"] for d in docs]
    scores = BM25Okapi(corpus).get_scores(terms(query) or ["_"])
    # A term found in every doc gets a negative IDF in BM25Okapi; plain overlap breaks ties.
    q = set(terms(query))
    keyed = [(i, float(s) + 0.01 * len(q & set(corpus[i]))) for i, s in enumerate(scores)]
    return sorted(keyed, key=lambda x: (-x[1], x[0]))
