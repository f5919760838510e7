"""The order a bench runs in: every variant of a task back to back, in a seeded shuffled order
that changes with each task and repeat, after a warm-up that is not counted.

Run one protocol's whole batch, then the next, and whatever drifts over the bench (a cold model
server warming up, another job starting or ending on the machine) lands on the protocols in
the order they ran, and passes for their cost. Interleaved, a drift falls on every variant of a
task alike; shuffled, no variant always goes first; seeded, the order can be run again. Pure.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")
V = TypeVar("V")


@dataclass(frozen=True)
class Slot(Generic[T, V]):
    """One run of the bench: its place in the order (from 1), repeat (from 1), task, variant."""

    order: int
    repeat: int
    task: T
    variant: V


def interleaved(tasks: Sequence[T], variants: Sequence[V], repeat: int, seed: int = 0) -> list[Slot[T, V]]:
    """Every (repeat, task, variant) once: repeats in turn, tasks in turn within a repeat, and
    each task's variants back to back in an order drawn from ``seed``."""
    rng = random.Random(seed)
    slots: list[Slot[T, V]] = []
    for r in range(1, repeat + 1):
        for task in tasks:
            for variant in rng.sample(list(variants), len(variants)):
                slots.append(Slot(len(slots) + 1, r, task, variant))
    return slots
