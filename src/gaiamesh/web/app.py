"""``gaiamesh serve-web``: the offline web as an HTTP service.

- ``GET /search?q=...&limit=5``: ``{"query", "results": [{"title", "url", "snippet"}]}``.
- ``GET /wiki/{slug}.html``: a page, with its boilerplate.
- ``GET /files/{slug}.txt``: a page's plain text, for downloads.
- ``GET /go/{slug}``: a redirect to the page (links as sites shorten them).
- ``GET /health``.
Read-only and without secrets: it serves public pages, like any web site.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI, HTTPException, Query
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse
from pydantic import BaseModel

from .corpus import Index, build


class Hit(BaseModel):
    title: str
    url: str
    snippet: str


class SearchResults(BaseModel):
    query: str
    results: list[Hit]


def create_app(tasks_dir: Path | None) -> FastAPI:
    """The web site over the pages built from ``tasks_dir`` and the hand-written ones."""
    pages = build(tasks_dir)
    index = Index(pages)
    app = FastAPI(title="gaiamesh offline web", docs_url=None, redoc_url=None)

    def page(slug: str) -> str:
        found = index.pages.get(slug)
        if found is None:
            raise HTTPException(404, f"no page {slug!r}")
        return found.html

    @app.get("/health", response_class=PlainTextResponse)
    def health() -> str:
        return f"ok ({len(pages)} pages)\n"

    @app.get("/search", response_model=SearchResults)
    def search(q: str = Query(min_length=1, max_length=500), limit: int = Query(5, ge=1, le=20)) -> SearchResults:
        return SearchResults(query=q, results=[Hit(**h) for h in index.search(q, limit)])

    @app.get("/wiki/{slug}.html", response_class=HTMLResponse)
    def wiki(slug: str) -> str:
        return page(slug)

    @app.get("/", response_class=HTMLResponse)
    def home() -> str:
        return page("index")

    @app.get("/files/{slug}.txt", response_class=PlainTextResponse)
    def text(slug: str) -> str:
        page(slug)
        return index.pages[slug].text

    @app.get("/go/{slug}")
    def go(slug: str) -> RedirectResponse:
        page(slug)
        return RedirectResponse(f"/wiki/{slug}.html", status_code=302)

    return app
