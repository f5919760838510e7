"""Plan templates of the orchestrated strategy (seed 004): a plan shape with ``${slot}``
placeholders, chosen by the English question forms that fill its slots.

A template's pattern is a heuristic: an English question form, written by hand, that decides
the plan's shape and its slots. The patterns stay data (templates/*.json); this module applies
them, with the slot rules of heuristics.py. Their measured worth: docs/strategies.md, "Heuristics".
Every template's plan passes :func:`~gaiamesh.orchestrated.plan.validate_plan` when it is loaded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .heuristics import (
    ARTICLES,
    ELLIPSIS,
    ORDINAL,
    PRONOUN_START,
    drop_unit,
    split_subject,
    unit_tail,
)
from .plan import Catalog, PlanError, validate_plan

SLOT = re.compile(r"\$\{([a-z_]+)\}")  # a template's slot, filled from the question

@dataclass(frozen=True)
class Form:
    """One wording of a template's question: a pattern whose named groups fill slots, and the
    slots it fixes itself (``{"type": "year"}``; a value may name other slots: ``"${a}"``)."""

    pattern: re.Pattern[str]
    fixed: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Template:
    """A plan shape with ``${slot}`` placeholders, chosen when one of its ``forms`` matches the
    question (the first that does); the form's groups and fixed values fill the slots, and the
    template's ``defaults`` fill those the form leaves open."""

    name: str
    forms: tuple[Form, ...]
    plan: dict[str, Any]
    priority: int = 0
    description: str = ""
    defaults: Mapping[str, str] = field(default_factory=dict)
    # A group to split into subject and predicate slots: {"clause": ["whole", "part"]}.
    split: Mapping[str, tuple[str, str]] = field(default_factory=dict)

    def slot_names(self, form: Form) -> set[str]:
        split = {n for pair in self.split.values() for n in pair}
        return set(form.pattern.groupindex) | set(form.fixed) | set(self.defaults) | split

    def match(self, question: str) -> dict[str, str] | None:
        text = " ".join(question.split())
        for form in self.forms:
            m = form.pattern.search(text)
            if m is not None:
                return self._slots(question, m, form)
        return None

    def _slots(self, question: str, m: re.Match[str], form: Form) -> dict[str, str] | None:
        slots = {k: drop_unit(v.strip(" ,")) for k, v in m.groupdict().items() if v is not None}
        for group, (subject, predicate) in self.split.items():
            parts = split_subject(slots.get(group, ""))
            if parts is None:
                return None  # the question does not have the form this template reads
            slots[subject], slots[predicate] = parts
        # "how many years after it opened did the airport ...": "it" is the other clause's subject
        for name, value in list(slots.items()):
            if PRONOUN_START.match(value):
                others = [split_subject(v) for n, v in slots.items() if n != name and not PRONOUN_START.match(v)]
                named = [p[0] for p in others if p and (p[0][:1].isupper() or p[0].split()[0].lower() in ARTICLES)]
                if named:
                    slots[name] = PRONOUN_START.sub(named[0] + " ", value, count=1)
        # "between the society's first show and its last": the second is the first's noun
        # phrase with its own ordinal ("the society's last show")
        for name, value in list(slots.items()):
            bare = ELLIPSIS.fullmatch(value)
            if bare:
                full = [v for n, v in slots.items() if n != name and not ELLIPSIS.fullmatch(v) and ORDINAL.search(v)]
                if full:
                    slots[name] = ORDINAL.sub(bare.group(1), full[0], count=1)
        # what the form fixes, then the template's defaults, once the groups are read
        for name, value in [*form.fixed.items(), *self.defaults.items()]:
            if name not in slots:
                slots[name] = " ".join(SLOT.sub(lambda r: slots.get(r.group(1), ""), value).split())
        unit = unit_tail(question)
        if unit:
            slots[UNIT_SLOT] = unit
        return slots

    def fill(self, slots: Mapping[str, str]) -> dict[str, Any]:
        """The plan with its slots filled (a slot the question did not fill is an error)."""

        unit = slots.get(UNIT_SLOT, "")

        def sub(value: Any) -> Any:
            if isinstance(value, dict):
                filled = {k: sub(v) for k, v in value.items()}
                # a number look-up that names no unit counts in the one the question asks for
                if unit and filled.get("answer_type") == "number" and not filled.get("unit"):
                    filled["unit"] = unit
                return filled
            if isinstance(value, list):
                return [sub(v) for v in value]
            if isinstance(value, str) and SLOT.search(value):
                # an empty slot leaves no double space behind ("${a} ${what}" with no what)
                return " ".join(SLOT.sub(lambda m: _slot(m.group(1), slots, self.name), value).split())
            return value

        return sub(self.plan)


# The unit the question asks its number in (", in metres"): not a pattern's slot, but given to
# every number look-up of the plan that names no unit of its own.
UNIT_SLOT = "_unit"


def _slot(name: str, slots: Mapping[str, str], template: str) -> str:
    if name not in slots:
        raise PlanError([f"template {template!r}: slot ${{{name}}} is not filled by its pattern"])
    return slots[name]


def _form(data: Mapping[str, Any]) -> Form:
    return Form(re.compile(data["pattern"], re.IGNORECASE), dict(data.get("slots", {})))


def load_template(path: Path, catalog: Catalog) -> Template:
    """One template file: ``pattern`` (one form) or ``forms`` (each a ``pattern`` and the
    ``slots`` it fixes), ``slots`` (defaults), ``plan``; each form's plan is validated now with
    stand-in values for the slots its groups fill."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        forms = [data] if "pattern" in data else data["forms"]
        template = Template(
            name=data.get("name", path.stem), forms=tuple(_form(f) for f in forms), plan=data["plan"],
            priority=int(data.get("priority", 0)), description=data.get("description", ""),
            defaults=dict(data.get("slots", {}) if "forms" in data else {}),
            split={k: (v[0], v[1]) for k, v in data.get("split", {}).items()},
        )  # fmt: skip
        if not template.forms:
            raise ValueError("no forms")
    except (OSError, ValueError, KeyError, TypeError, re.error) as exc:
        raise PlanError([f"template {path.name}: {type(exc).__name__}: {exc}"]) from exc
    for form in template.forms:
        stand_in = {name: "x" for name in template.slot_names(form)}
        stand_in |= {k: SLOT.sub("x", v) for k, v in {**template.defaults, **form.fixed}.items() if k not in form.pattern.groupindex}
        try:
            validate_plan(template.fill(stand_in), catalog, source=f"template:{template.name}")
        except PlanError as exc:
            raise PlanError([f"template {path.name}: {r}" for r in exc.reasons]) from exc
    return template


def load_templates(folder: Path, catalog: Catalog) -> list[Template]:
    """Every ``*.json`` template in ``folder``, each checked now (its patterns compile, its plan
    validates with stand-in slot values), highest priority first; raises :class:`PlanError`
    naming the file at the first bad one."""
    templates = [load_template(path, catalog) for path in sorted(folder.glob("*.json"))]
    return sorted(templates, key=lambda t: -t.priority)
