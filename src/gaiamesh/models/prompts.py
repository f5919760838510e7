"""Few-shot prompts for a base model (no chat template): the pattern does the instructing.

The examples are generic, not drawn from any task, and the same answer prompt serves the
mesh's ``reason`` tool and the single-call baseline so that the comparison is fair.
"""

from __future__ import annotations

import re

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


def answer_prompt(context: str, question: str) -> str:
    return f"{ANSWER_SHOTS}Context: {' '.join(context.split())}\nQuestion: {question.strip()}\nAnswer:"


def triple_prompt(sentence: str) -> str:
    return f"{TRIPLE_SHOTS}Sentence: {' '.join(sentence.split())}\nTriple: ("


_TRIPLE = re.compile(r"^\s*([^|()]+?)\s*\|\s*([^|()]+?)\s*\|\s*([^|()]+?)\s*\)?\s*$")


def parse_triple(text: str) -> tuple[str, str, str] | None:
    """Parse the model's ``subject | relation | object)`` continuation; None if it is not one."""
    m = _TRIPLE.match(text.split("\n", 1)[0])
    return (m.group(1), m.group(2), m.group(3)) if m else None


_TITLE = re.compile(r"^(?:Dr|Mr|Mrs|Ms|Prof|Sir|Capt|Captain)\.?\s+(?=[A-Z])")


def clean_answer(text: str) -> str:
    """First line of the model's continuation, without quotes or a trailing full stop."""
    line = text.strip().split("\n", 1)[0].strip()
    line = line.strip("\"'` ")
    line = _TITLE.sub("", line)  # short answers name people without honorifics
    return line[:-1].strip() if line.endswith(".") and not re.search(r"\b[A-Z]\.[A-Z]\.$", line) else line
