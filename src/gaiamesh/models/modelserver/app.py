"""An Ollama-API-compatible HTTP server over llama.cpp, answering the official ``ollama`` client.

Endpoints: ``/api/generate``, ``/api/chat`` (NDJSON streaming and ``"stream": false``; ``format``
holds the output to JSON or a JSON schema through a llama.cpp grammar, as Ollama's does),
``/api/tags``, ``/api/show``, ``/api/ps``, ``/api/version``, ``/api/pull`` and ``GET /``; and one
of ours, ``/api/score``: the log-probability of given continuations of a prompt (Ollama's own
``logprobs`` only covers tokens it generated), which the pipeline uses to weigh candidate answers.
Errors use Ollama's shape: ``{"error": "..."}`` with a 4xx/5xx status.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from ..types import Scored, ScoreRequest, ScoreResponse
from .engine import Engine, GenOptions, Piece

VERSION = "0.6.3"  # the Ollama API version whose shapes we follow


class _Req(BaseModel):
    model_config = ConfigDict(extra="allow")
    model: str = Field(min_length=1)
    stream: bool = True
    options: dict[str, Any] | None = None
    keep_alive: str | int | float | None = None
    format: str | dict[str, Any] | None = None  # "json" or a JSON schema: the output follows it


class GenerateRequest(_Req):
    prompt: str = ""
    system: str | None = None
    raw: bool = False
    suffix: str | None = None


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str
    content: str = ""


class ChatRequest(_Req):
    messages: list[ChatMessage] = Field(default_factory=list)


class NameRequest(BaseModel):
    model_config = ConfigDict(extra="allow")
    model: str | None = None
    name: str | None = None
    stream: bool = True

    @property
    def target(self) -> str:
        return self.model or self.name or ""


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def render_chat(messages: list[ChatMessage]) -> str:
    """A plain transcript for a base model without a chat template, ending in ``Assistant:``."""
    lines = []
    for m in messages:
        if m.role == "system":
            lines.append(f"{m.content.strip()}\n")
        else:
            lines.append(f"{m.role.capitalize()}: {m.content.strip()}")
    return "\n".join(lines) + "\nAssistant:"


def error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


@dataclass(frozen=True)
class Served:
    """The one model this server answers for, as the Ollama API describes it."""

    engine: Engine
    name: str
    digest: str
    modified: str
    details: dict[str, Any]

    @classmethod
    def of(cls, engine: Engine, name: str) -> Served:
        mtime = datetime.fromtimestamp(engine.model_path.stat().st_mtime, UTC)
        family = name.split(":", 1)[0].rstrip("0123456789.") or name
        details = {"parent_model": "", "format": "gguf", "family": family, "families": [family],
                   "parameter_size": "268.10M", "quantization_level": "Q4_K_M"}  # fmt: skip
        digest = hashlib.sha256(f"{name}:{engine.size}".encode()).hexdigest()
        return cls(engine, name, digest, mtime.isoformat().replace("+00:00", "Z"), details)

    def known(self, name: str) -> bool:
        return name == self.name or (":" not in self.name and name == f"{self.name}:latest")

    def entry(self) -> dict[str, Any]:
        return {"name": self.name, "model": self.name, "modified_at": self.modified, "size": self.engine.size,
                "digest": self.digest, "details": self.details}  # fmt: skip


def served(request: Request) -> Served:
    return request.app.state.served  # type: ignore[no-any-return]


Model = Annotated[Served, Depends(served)]
router = APIRouter()


async def _bad_request(_: Request, exc: RequestValidationError) -> JSONResponse:
    first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
    where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
    return error(400, f"invalid request: {where + ': ' if where else ''}{first.get('msg')}")


@router.get("/", response_class=PlainTextResponse)
@router.head("/", response_class=PlainTextResponse)
async def root() -> str:
    return "Ollama is running"


@router.get("/api/version")
async def version() -> dict[str, str]:
    return {"version": VERSION}


@router.get("/api/tags")
async def tags(m: Model) -> dict[str, Any]:
    return {"models": [m.entry()]}


@router.get("/api/ps")
async def ps(m: Model) -> dict[str, Any]:
    expires = (datetime.fromtimestamp(m.engine.last_used, UTC) + timedelta(minutes=5)).isoformat()
    return {"models": [{**m.entry(), "expires_at": expires.replace("+00:00", "Z"), "size_vram": 0}]}


@router.post("/api/show", response_model=None)
async def show(req: NameRequest, m: Model) -> dict[str, Any] | JSONResponse:
    if not m.known(req.target):
        return error(404, f"model '{req.target}' not found")
    meta = dict(m.engine.llm.metadata)
    meta.pop("tokenizer.chat_template", None)
    return {
        "modified_at": m.modified,
        "template": "{{ .Prompt }}",
        "modelfile": f"FROM {m.engine.model_path}\nTEMPLATE {{{{ .Prompt }}}}\n",
        "license": "Gemma Terms of Use",
        "parameters": f"num_ctx {m.engine.n_ctx}",
        "details": m.details,
        "model_info": meta,
        "capabilities": ["completion"],
    }


@router.post("/api/pull", response_model=None)
async def pull(req: NameRequest, m: Model) -> Any:
    if not m.known(req.target):
        # The model is bundled; nothing can be downloaded here.
        return error(404, f"pull model manifest: model '{req.target}' is not bundled with this server")
    steps = [{"status": "pulling manifest"}, {"status": "verifying sha256 digest"}, {"status": "success"}]
    if not req.stream:
        return steps[-1]

    async def lines() -> AsyncIterator[bytes]:
        for s in steps:
            yield (json.dumps(s) + "\n").encode()

    return StreamingResponse(lines(), media_type="application/x-ndjson")


def final_fields(p: Piece) -> dict[str, Any]:
    return {
        "done_reason": p.done_reason,
        "total_duration": p.total_duration,
        "load_duration": p.load_duration,
        "prompt_eval_count": p.prompt_eval_count,
        "prompt_eval_duration": p.prompt_eval_duration,
        "eval_count": p.eval_count,
        "eval_duration": p.eval_duration,
    }


Shape = Callable[[str, bool], dict[str, Any]]


async def respond(engine: Engine, prompt: str, req: _Req, shape: Shape) -> Any:
    """Generate for ``prompt``: NDJSON pieces when streaming, else one body; ``shape`` makes the
    route's body (generate's ``response``, chat's ``message``) around each piece of text."""
    opts = GenOptions.from_ollama(req.options, req.format)
    if req.stream:

        async def lines() -> AsyncIterator[bytes]:
            try:
                async for piece in engine.stream(prompt, opts):
                    body = shape(piece.text, piece.done)
                    if piece.done:
                        body.update(final_fields(piece))
                    yield (json.dumps(body) + "\n").encode()
            except ValueError as exc:
                yield (json.dumps({"error": str(exc)}) + "\n").encode()

        return StreamingResponse(lines(), media_type="application/x-ndjson")
    text, last = [], None
    try:
        async for piece in engine.stream(prompt, opts):
            text.append(piece.text)
            last = piece
    except ValueError as exc:
        return error(400, str(exc))
    assert last is not None
    return {**shape("".join(text), True), **final_fields(last)}


@router.post("/api/generate", response_model=None)
async def generate(req: GenerateRequest, m: Model) -> Any:
    if not m.known(req.model):
        return error(404, f"model '{req.model}' not found")
    if not req.prompt:
        # Ollama loads the model and answers at once when the prompt is empty.
        return {"model": req.model, "created_at": _now(), "response": "", "done": True, "done_reason": "load"}
    prompt = req.prompt if req.raw or not req.system else f"{req.system}\n\n{req.prompt}"

    def shape(text: str, done: bool) -> dict[str, Any]:
        return {"model": req.model, "created_at": _now(), "response": text, "done": done}

    return await respond(m.engine, prompt, req, shape)


@router.post("/api/score", response_model=None)
async def score(req: ScoreRequest, m: Model) -> Any:
    if not m.known(req.model):
        return error(404, f"model '{req.model}' not found")
    if any(not c for c in req.continuations):
        return error(400, "every continuation must be a non-empty string")
    try:
        got = await m.engine.score(req.prompt, req.continuations)
    except ValueError as exc:
        return error(400, str(exc))
    return ScoreResponse(
        model=req.model, created_at=_now(),
        scores=[Scored(continuation=c, logprob=sum(lp), token_logprobs=lp)
                for c, lp in zip(req.continuations, got.token_logprobs, strict=True)],
        prompt_eval_count=got.prompt_eval_count, eval_count=got.eval_count,
        total_duration=got.total_duration, load_duration=got.load_duration,
    ).model_dump()  # fmt: skip


@router.post("/api/chat", response_model=None)
async def chat(req: ChatRequest, m: Model) -> Any:
    if not m.known(req.model):
        return error(404, f"model '{req.model}' not found")
    if not req.messages:
        return {"model": req.model, "created_at": _now(), "message": {"role": "assistant", "content": ""},
                "done": True, "done_reason": "load"}  # fmt: skip

    def shape(text: str, done: bool) -> dict[str, Any]:
        return {"model": req.model, "created_at": _now(), "message": {"role": "assistant", "content": text},
                "done": done}  # fmt: skip

    if not (req.options or {}).get("stop"):
        # Without a chat template, stop where the transcript would hand back to the user.
        req.options = {**(req.options or {}), "stop": ["\nUser:"]}
    return await respond(m.engine, render_chat(req.messages), req, shape)


def create_app(engine: Engine, model_name: str) -> FastAPI:
    """The FastAPI app serving ``engine`` under the Ollama-style name ``model_name``."""
    app = FastAPI(title="gaiamesh model server", version=VERSION)
    app.state.served = Served.of(engine, model_name)
    app.add_exception_handler(RequestValidationError, _bad_request)  # type: ignore[arg-type]
    app.include_router(router)
    return app
