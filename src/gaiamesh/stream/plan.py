"""A stream's plan: whom its coordinator dispatches to and how, the first line of the stream's
``doc_init`` (``{"plan": {...}}``, then one item a line).

Whoever starts the stream writes it, since only they know the team: ``gaiamesh stream`` names
the answerers it starts (``1`` to ``N``), or, on a deployment, the replicas the relay will find
(swarm's ``tasks.<service>``: ``12.10-0-1-5``). A coordinator that was deployed once thus
takes each stream's workers and policy from the stream itself, not from its environment, and
the plan travels on the wire like every item."""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import TaskError

Policy = Literal["dynamic", "round-robin"]


class StreamPlan(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    workers: tuple[str, ...] = Field(min_length=1, max_length=4096)  # the answerers' node ids
    policy: Policy = "dynamic"  # dynamic: the next free worker (ProtocolBench's); round-robin: in turn
    per_worker: int = Field(default=1, ge=1, le=1024)  # items in flight on a worker at most

    def line(self) -> str:
        return json.dumps({"plan": self.model_dump(mode="json")}, separators=(",", ":"))

    @classmethod
    def of_line(cls, raw: bytes, where: str) -> StreamPlan:
        """The plan on the first line of a stream's ``doc_init``; a :class:`TaskError` naming
        ``where`` when that line is not one."""
        try:
            value = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise TaskError(f"{where}:1: not JSON ({exc}); a stream's first line is its plan") from exc
        if not isinstance(value, dict) or "plan" not in value:
            raise TaskError(f'{where}:1: not the stream\'s plan ({{"plan": {{"workers": [...]}}}}), which comes first')
        try:
            return cls.model_validate(value["plan"])
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "plan"
            raise TaskError(f"{where}:1: plan.{field}: {first['msg']}") from exc
