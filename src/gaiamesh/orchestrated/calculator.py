"""``calculator``: arithmetic on a safe evaluator (``simpleeval``), never ``eval``.

Only numbers, the arithmetic operators, parentheses and ``abs``, ``round``, ``min``, ``max``
are allowed. Names, attribute access, subscripts, strings, huge powers and huge results are
refused with a message that says which.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from typing import Any

from simpleeval import SimpleEval

from ..errors import ToolError
from .heuristics import NUMBER_VALUES, SCALE_VALUES

MAX_EXPRESSION = 500  # characters
MAX_EXPONENT = 64
MAX_MAGNITUDE = 1e15
FUNCTIONS = {"abs": abs, "round": round, "min": min, "max": max}


class CalculatorError(ToolError):
    """An expression the calculator refuses or cannot evaluate."""


def _power(base: Any, exponent: Any) -> Any:
    if abs(exponent) > MAX_EXPONENT or abs(base) > MAX_MAGNITUDE:
        raise CalculatorError(f"power too large: {base} ** {exponent} (exponent at most {MAX_EXPONENT})")
    return base**exponent


_OPERATORS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: _power,
    ast.USub: operator.neg, ast.UAdd: operator.pos,
}  # fmt: skip
_ALLOWED = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Call, ast.Name, ast.Load, ast.operator, ast.unaryop)


def _check(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            raise CalculatorError("attribute access is not allowed")
        if isinstance(node, ast.Subscript):
            raise CalculatorError("subscripts are not allowed")
        if isinstance(node, ast.Constant) and (
            isinstance(node.value, bool) or not isinstance(node.value, int | float)
        ):
            raise CalculatorError(f"only numbers are allowed, not {type(node.value).__name__} {node.value!r}")
        if isinstance(node, ast.Name) and node.id not in FUNCTIONS:
            raise CalculatorError(f"unknown name {node.id!r} (allowed functions: {', '.join(FUNCTIONS)})")
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and not node.keywords):
            raise CalculatorError("only abs(), round(), min() and max() may be called, without keywords")
        if not isinstance(node, _ALLOWED):
            raise CalculatorError(f"{type(node).__name__} is not allowed in an expression")


def calculate(expression: str) -> int | float:
    """The value of ``expression``; raises :class:`CalculatorError` naming what is refused."""
    text = expression.strip()
    if not text:
        raise CalculatorError("empty expression")
    if len(text) > MAX_EXPRESSION:
        raise CalculatorError(f"expression too long ({len(text)} characters > {MAX_EXPRESSION})")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise CalculatorError(f"not an arithmetic expression: {exc.msg} in {text!r}") from exc
    _check(tree)
    evaluator = SimpleEval(operators=_OPERATORS, functions=FUNCTIONS, names={})
    try:
        value = evaluator.eval(text, previously_parsed=tree.body)
    except ZeroDivisionError as exc:
        raise CalculatorError(f"division by zero in {text!r}") from exc
    except (OverflowError, ValueError, TypeError) as exc:
        raise CalculatorError(f"cannot evaluate {text!r}: {exc}") from exc
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise CalculatorError(f"{text!r} is not a number")
    if isinstance(value, float) and not math.isfinite(value) or abs(value) > MAX_MAGNITUDE:
        raise CalculatorError(f"result out of range: {value}")
    return value


def format_number(value: int | float) -> str:
    """A result as people write it: whole numbers without a decimal point, others to 4 places."""
    if isinstance(value, float):
        if value.is_integer():
            return str(int(value))
        return f"{value:.4f}".rstrip("0").rstrip(".")
    return str(value)


_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")


def to_number(text: str) -> int | float | None:
    """The number a span states ("1,250 tonnes" -> 1250, "2.5 million" -> 2500000, "twelve" -> 12,
    "forty-two" -> 42), or None when it states none."""
    lower = text.lower().replace("-", " ")
    found = _NUMBER.search(lower.replace("−", "-"))
    value: float | None = None
    if found:
        value = float(found.group(0).replace(",", ""))
    else:
        # "two thousand three hundred and ten": each scale closes the group before it; "and"
        # joins only after a scale word ("one thousand and forty").
        total, group, last = 0, 0, ""
        for w in re.findall(r"[a-z]+", lower):
            if w in NUMBER_VALUES:
                group += NUMBER_VALUES[w]
            elif w == "hundred" and value is not None:
                group = (group or 1) * 100
            elif w in SCALE_VALUES and value is not None:
                total, group = total + (group or 1) * SCALE_VALUES[w], 0
            elif w == "and" and last in SCALE_VALUES:
                last = w
                continue
            elif value is not None:
                break
            else:
                continue
            value, last = total + group, w
    if value is None:
        return None
    after = lower[found.end() :] if found else ""
    scale = re.match(rf"\s*({'|'.join(SCALE_VALUES)})\b", after)
    if scale:
        value = round(value * SCALE_VALUES[scale.group(1)], 6)  # 8.2 million is 8200000, not 8199999.999999999
    return int(value) if float(value).is_integer() else value
