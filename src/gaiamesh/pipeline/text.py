"""Text helpers shared by the retrieval tools: tokens, sentences, BM25 ranking. The English word
lists they use (stop words, abbreviations, paraphrase groups) are heuristics, in ``heuristics.py``."""

from __future__ import annotations

import re
from functools import lru_cache

from lemminflect import getAllLemmas
from nltk.stem.porter import PorterStemmer
from rank_bm25 import BM25Okapi

from .heuristics import ABBREVIATION, PARAPHRASES, STOPWORDS

_WORD = re.compile(r"[a-z0-9]+(?:[.,][0-9]+)*")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[A-Z0-9\"'(\[])")

_PORTER = PorterStemmer()
PHRASE_BONUS = 1.0  # per pair of adjacent question terms found adjacent in a doc


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Porter stem of the word's lemma: 'automated' meets 'automation', 'took' meets 'take'."""
    lemmas = getAllLemmas(word)
    verbs = lemmas.get("VERB", ())
    # Only a word that can be nothing but a verb form is replaced ("took", not "rose" or "found").
    if verbs and word not in verbs and set(lemmas) <= {"VERB", "AUX"}:
        word = verbs[0]
    return str(_PORTER.stem(word))


def terms(text: str) -> list[str]:
    """Content terms of ``text``: lower-cased, stop words removed, stemmed."""
    return [stem(w) for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


def sentences(text: str) -> list[str]:
    """Split prose into sentences (keeps abbreviations like 'U.S.' mostly intact). A line break
    ends a sentence too, so a heading ("History") is not read as the start of the next."""
    out: list[str] = []
    for line in text.splitlines():
        out.extend(_line_sentences(line))
    return out


def _line_sentences(text: str) -> list[str]:
    flat = " ".join(text.split())
    out: list[str] = []
    for piece in _SENTENCE_END.split(flat):
        piece = piece.strip()
        if not piece:
            continue
        if out and ABBREVIATION.search(out[-1]):
            out[-1] = f"{out[-1]} {piece}"  # "Dr. Ann Lee" is one sentence
        else:
            out.append(piece)
    return out


# Each paraphrase group (a heuristic: heuristics.PARAPHRASES), by each of its stems.
_GROUPS: dict[str, set[str]] = {}
for _group in PARAPHRASES:
    _stems = {stem(w) for w in _group.split()}
    for _s in _stems:
        _GROUPS.setdefault(_s, set()).update(_stems)


def paraphrases(query_terms: list[str]) -> list[str]:
    """Paraphrases of the query's terms that the query does not already hold."""
    extra: list[str] = []
    for t in query_terms:
        extra.extend(sorted(_GROUPS.get(t, set()) - set(query_terms) - set(extra)))
    return extra


def rank(query: str, docs: list[str]) -> list[tuple[int, float]]:
    """BM25 scores of ``docs`` for ``query`` (paraphrases at half weight), best first: ``(index, score)``."""
    if not docs:
        return []
    corpus = [terms(d) or ["_"] for d in docs]
    bm25 = BM25Okapi(corpus)
    q_terms = terms(query)
    # Names in the question mostly name the document's subject, which many sentences mention;
    # the question's other words (what happened to it) pick the sentence. Names count half.
    names = {t for w in re.findall(r"(?<!^)(?<![.?!] )\b[A-Z][\w'-]*", query.strip()) for t in terms(w)}
    plain = [t for t in q_terms if t not in names]
    scores = bm25.get_scores(plain or ["_"]) + 0.5 * bm25.get_scores(
        [t for t in q_terms if t in names] or ["_"]
    )
    extra = paraphrases(q_terms)
    if extra:  # a paraphrase is weaker evidence than the question's own word
        scores = scores + 0.5 * bm25.get_scores(extra)
    # Proximity: the question's adjacent words adjacent in a doc ("first captain") are one
    # phrase there, stronger evidence than the same words apart ("first woman captain").
    # Names are left out: the subject's name is a phrase in every sentence that names it.
    pairs = {(a, b) for a, b in zip(q_terms, q_terms[1:], strict=False) if a not in names and b not in names}
    phrase = [len(pairs & set(zip(c, c[1:], strict=False))) for c in corpus]
    # A term found in every doc gets a negative IDF in BM25Okapi; plain overlap breaks ties.
    q = set(q_terms)
    keyed = [
        (i, float(s) + PHRASE_BONUS * phrase[i] + 0.01 * len(q & set(corpus[i])))
        for i, s in enumerate(scores)
    ]
    return sorted(keyed, key=lambda x: (-x[1], x[0]))
