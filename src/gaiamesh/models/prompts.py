"""Each prompt in both forms: few-shot text for a base model (the pattern does the
instructing), and system and user messages for a chat model (its own template formats them).

The examples are generic, not drawn from any task, and the same answer prompt serves the
mesh's ``reason`` tool and the single-call baseline so that the comparison is fair. Scoring a
continuation always reads the text form (as lm-evaluation-harness does), whatever the model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


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

ANSWER_SHOTS = """Answer each question with a short phrase copied from the context.

Context: The Halden Bridge opened to traffic on 3 May 1931. It spans 412 metres across the river Tolva.
Question: How long is the Halden Bridge?
Answer: 412 metres

Context: Marta Ivers founded the Greystone Choir in Ambridge. The choir first performed in 1978.
Question: Who founded the Greystone Choir?
Answer: Marta Ivers

Context: The expedition left Porto Vell in March. It reached the summit of Mount Keri after 19 days.
Question: Where did the expedition start?
Answer: Porto Vell

"""

TRIPLE_SHOTS = """Write one (subject | relation | object) triple for each sentence.

Sentence: The Halden Bridge opened to traffic on 3 May 1931.
Triple: (Halden Bridge | opened on | 3 May 1931)

Sentence: Marta Ivers founded the Greystone Choir in Ambridge.
Triple: (Marta Ivers | founded | Greystone Choir)

"""


ANSWER_SYSTEM = (
    "Answer the question with a short phrase copied from the context: a name, a number, a date "
    "or a place. Reply with the phrase alone, without a sentence around it."
)
TRIPLE_SYSTEM = (
    "Write one (subject | relation | object) triple for the sentence, in that form, "
    "with nothing before or after it."
)


def answer_prompt(context: str, question: str) -> Prompt:
    asked = f"Context: {' '.join(context.split())}\nQuestion: {question.strip()}"
    return Prompt(f"{ANSWER_SHOTS}{asked}\nAnswer:", ANSWER_SYSTEM, asked)


def triple_prompt(sentence: str) -> Prompt:
    said = f"Sentence: {' '.join(sentence.split())}"
    return Prompt(f"{TRIPLE_SHOTS}{said}\nTriple: (", TRIPLE_SYSTEM, said)


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
