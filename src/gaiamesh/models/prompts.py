"""Each prompt in both forms: few-shot text for a base model (the pattern does the
instructing), and system and user messages for a chat model (its own template formats them).

The examples are generic, not drawn from any task, and the same answer prompt serves the
mesh's ``reason`` tool and the single-call baseline so that the comparison is fair. Scoring a
continuation always reads the text form (as lm-evaluation-harness does), whatever the model.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, Field, ValidationError

R = TypeVar("R", bound=BaseModel)
# The longest part of a JSON reply, in characters: short answers and triple parts are phrases,
# and a bound keeps a 270M model from running on inside a string.
REPLY_CHARS = 80


@dataclass(frozen=True)
class Prompt:
    """One request in both forms: ``text`` for raw completion, ``system`` and ``user`` for chat."""

    text: str
    system: str
    user: str

    def messages(self) -> list[dict[str, str]]:
        return [{"role": "system", "content": self.system}, {"role": "user", "content": self.user}]

    @classmethod
    def plain(cls, text: str) -> Prompt:
        """A prompt written once: a chat model gets the text as its user message."""
        return cls(text, "", text)

# The worked examples, written once and shown in both answer forms: a bare phrase (the text the
# model's likelihood scores) and a JSON object (for output held to a schema).
ANSWER_EXAMPLES = (
    ("The Halden Bridge opened to traffic on 3 May 1931. It spans 412 metres across the river Tolva.",
     "How long is the Halden Bridge?", "412 metres"),
    ("Marta Ivers founded the Greystone Choir in Ambridge. The choir first performed in 1978.",
     "Who founded the Greystone Choir?", "Marta Ivers"),
    ("The expedition left Porto Vell in March. It reached the summit of Mount Keri after 19 days.",
     "Where did the expedition start?", "Porto Vell"),
)  # fmt: skip
TRIPLE_EXAMPLES = (
    ("The Halden Bridge opened to traffic on 3 May 1931.", ("Halden Bridge", "opened on", "3 May 1931")),
    ("Marta Ivers founded the Greystone Choir in Ambridge.", ("Marta Ivers", "founded", "Greystone Choir")),
)
ANSWER_LEAD = "Answer each question with a short phrase copied from the context.\n\n"
ANSWER_JSON_LEAD = "Answer each question with a short phrase copied from the context, as JSON.\n\n"
TRIPLE_LEAD = "Write one (subject | relation | object) triple for each sentence.\n\n"
TRIPLE_JSON_LEAD = "Write one subject-relation-object triple for each sentence, as JSON.\n\n"


class AnswerReply(BaseModel):
    """A typed answer, as the model writes it under :func:`answer_schema`."""

    answer: str


class TripleReply(BaseModel):
    """A triple, as the model writes it under :data:`TRIPLE_SCHEMA`."""

    subject: str = Field(max_length=REPLY_CHARS)
    relation: str = Field(max_length=REPLY_CHARS)
    object: str = Field(max_length=REPLY_CHARS)


def _answer_shots(structured: bool) -> str:
    def said(answer: str) -> str:
        return AnswerReply(answer=answer).model_dump_json() if structured else answer

    lead = ANSWER_JSON_LEAD if structured else ANSWER_LEAD
    return lead + "".join(f"Context: {c}\nQuestion: {q}\nAnswer: {said(a)}\n\n" for c, q, a in ANSWER_EXAMPLES)


def _triple_shots(structured: bool) -> str:
    if structured:
        return TRIPLE_JSON_LEAD + "".join(
            f"Sentence: {s}\nTriple: {TripleReply(subject=a, relation=r, object=b).model_dump_json()}\n\n"
            for s, (a, r, b) in TRIPLE_EXAMPLES
        )
    return TRIPLE_LEAD + "".join(f"Sentence: {s}\nTriple: ({a} | {r} | {b})\n\n" for s, (a, r, b) in TRIPLE_EXAMPLES)


class SplitReply(BaseModel):
    """A question split in two, as the model writes it under :data:`SPLIT_SCHEMA`: whether it
    needs two facts, the first question (its answer names the bridge) and the second, with
    ``{bridge}`` where the bridge's name goes."""

    two_facts: bool
    first: str = Field(max_length=2 * REPLY_CHARS)
    second: str = Field(max_length=2 * REPLY_CHARS)


SPLIT_EXAMPLES = (
    ("Who designed the bridge that replaced the old ferry?",
     SplitReply(two_facts=True, first="Which bridge replaced the old ferry?", second="Who designed {bridge}?")),
    ("When did the Corran mill open?", SplitReply(two_facts=False, first="", second="")),
    ("In which town was the founder of the Aske choir born?",
     SplitReply(two_facts=True, first="Who founded the Aske choir?", second="In which town was {bridge} born?")),
)  # fmt: skip
SPLIT_LEAD = (
    "Split a question that needs two facts into a first question, whose answer names someone or "
    "something, and a second question about it, with {bridge} where its name goes. A question "
    "that needs one fact is not split. Answer as JSON.\n\n"
)
SPLIT_SHOTS = SPLIT_LEAD + "".join(f"Question: {q}\nSplit: {r.model_dump_json()}\n\n" for q, r in SPLIT_EXAMPLES)
SPLIT_SCHEMA: dict[str, Any] = SplitReply.model_json_schema()


def split_prompt(question: str) -> Prompt:
    """The prompt for a question's split into two (held to :data:`SPLIT_SCHEMA` where the
    backend takes one; the examples show the same JSON either way)."""
    asked = f"Question: {' '.join(question.split())}"
    return Prompt(f"{SPLIT_SHOTS}{asked}\nSplit:", SPLIT_LEAD.replace("\n\n", ""), asked)


ANSWER_SHOTS = _answer_shots(structured=False)
TRIPLE_SHOTS = _triple_shots(structured=False)

ANSWER_SYSTEM = (
    "Answer the question with a short phrase copied from the context: a name, a number, a date "
    "or a place. Reply with the phrase alone, without a sentence around it."
)
TRIPLE_SYSTEM = (
    "Write one (subject | relation | object) triple for the sentence, in that form, "
    "with nothing before or after it."
)
JSON_REPLY = " Reply with a JSON object of the form {}."
TRIPLE_JSON_SYSTEM = (
    "Write one subject-relation-object triple for the sentence, its parts copied from it."
    + JSON_REPLY.format('{"subject": "...", "relation": "...", "object": "..."}')
)

def answer_prompt(context: str, question: str, structured: bool = False) -> Prompt:
    """The answer prompt; ``structured``: the answer asked for as JSON (:func:`answer_schema`)."""
    asked = f"Context: {' '.join(context.split())}\nQuestion: {question.strip()}"
    if structured:
        system = ANSWER_SYSTEM + JSON_REPLY.format('{"answer": "..."}')
        return Prompt(f"{_answer_shots(True)}{asked}\nAnswer:", system, asked)
    return Prompt(f"{ANSWER_SHOTS}{asked}\nAnswer:", ANSWER_SYSTEM, asked)


def triple_prompt(sentence: str, structured: bool = False) -> Prompt:
    """The triple prompt; ``structured``: the triple asked for as JSON (:data:`TRIPLE_SCHEMA`)."""
    said = f"Sentence: {' '.join(sentence.split())}"
    if structured:
        return Prompt(f"{_triple_shots(True)}{said}\nTriple:", TRIPLE_JSON_SYSTEM, said)
    return Prompt(f"{TRIPLE_SHOTS}{said}\nTriple: (", TRIPLE_SYSTEM, said)


TRIPLE_SCHEMA: dict[str, Any] = TripleReply.model_json_schema()


def answer_schema() -> dict[str, Any]:
    """The schema of a typed answer: a short string."""
    field = {"type": "string", "maxLength": REPLY_CHARS}
    return {"type": "object", "properties": {"answer": field}, "required": ["answer"], "additionalProperties": False}


def parse_reply(model: type[R], text: str) -> R | None:
    """The model's JSON reply validated as ``model``; None when it is not one (cut short by
    the token limit, or a server that ignored the schema)."""
    try:
        # strict=False: a raw newline inside a string (servers whose grammar lets one through)
        return model.model_validate(json.loads(text, strict=False))
    except (ValueError, ValidationError):
        return None


_TRIPLE = re.compile(r"^\s*\(?\s*([^|()]+?)\s*\|\s*([^|()]+?)\s*\|\s*([^|()]+?)\s*\)?\s*$")


def parse_triple(text: str) -> tuple[str, str, str] | None:
    """Parse a triple: a base model's ``subject | relation | object)`` continuation, or a chat
    model's whole ``(subject | relation | object)``; None if it is not one."""
    m = _TRIPLE.match(text.split("\n", 1)[0])
    return (m.group(1), m.group(2), m.group(3)) if m else None


_TITLE = re.compile(r"^(?:Dr|Mr|Mrs|Ms|Prof|Sir|Capt|Captain)\.?\s+(?=[A-Z])")


def clean_answer(text: str) -> str:
    """First line of the model's continuation, without quotes or a trailing full stop."""
    line = text.strip().split("\n", 1)[0].strip()
    line = line.strip("\"'` ")
    line = _TITLE.sub("", line)  # short answers name people without honorifics
    return line[:-1].strip() if line.endswith(".") and not re.search(r"\b[A-Z]\.[A-Z]\.$", line) else line
