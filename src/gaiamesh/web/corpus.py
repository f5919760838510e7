"""The pages of the offline web and their search index.

The corpus is the bundled task documents, each wrapped in a site's page (navigation, a sidebar
of links to other pages, a cookie notice, scripts, a footer: the boilerplate a reader must drop),
plus the hand-written pages in ``pages/``. The index is SQLite FTS5 with its bm25 ranking.
"""

from __future__ import annotations

import html
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from ..tasks import bundled_names
from .reader import html_to_text  # the same reader the research worker uses

PAGES = Path(__file__).parent / "pages"
_WORD = re.compile(r"[A-Za-z0-9]+")


@dataclass(frozen=True)
class Page:
    slug: str
    title: str
    html: str
    text: str  # the page's own words, for the index


def _title(doc: str, slug: str) -> str:
    first = doc.strip().split(". ", 1)[0]
    return first if len(first) <= 90 else slug.replace("-", " ").title()


def render(slug: str, title: str, body_html: str, links: list[tuple[str, str]]) -> str:
    """A page as a real site serves it: the article inside navigation and boilerplate."""
    related = "\n".join(f'      <li><a href="/wiki/{s}.html">{html.escape(t)}</a></li>' for s, t in links)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>{html.escape(title)} - Regional Heritage Wiki</title>
  <link rel="stylesheet" href="/static/site.css">
  <script>window.dataLayer = window.dataLayer || []; function track(e) {{ dataLayer.push(e); }}</script>
</head>
<body>
  <header><a href="/">Regional Heritage Wiki</a> <form action="/search"><input name="q"></form></header>
  <nav><ul><li><a href="/">Home</a></li><li><a href="/wiki/index.html">All pages</a></li>
    <li><a href="/about.html">About</a></li><li><a href="/donate.html">Donate</a></li></ul></nav>
  <div class="cookie-banner">We use cookies to improve your experience. <button>Accept</button></div>
  <main>
    <article>
      <h1>{html.escape(title)}</h1>
{body_html}
    </article>
  </main>
  <aside>
    <h2>Related pages</h2>
    <ul>
{related}
    </ul>
  </aside>
  <footer>Text is available under the Creative Commons Attribution-ShareAlike License.
    <a href="/privacy.html">Privacy</a> · <a href="/contact.html">Contact</a></footer>
  <script src="/static/analytics.js"></script>
</body>
</html>
"""


def build(tasks_dir: Path | None) -> list[Page]:
    """Every page: one per bundled task document, and the hand-written ones."""
    sources: list[tuple[str, str, str]] = []  # slug, title, plain text
    for name in bundled_names(tasks_dir) if tasks_dir is not None else []:
        doc = (Path(str(tasks_dir)) / name / "doc.txt").read_text(encoding="utf-8")
        sources.append((name, _title(doc, name), doc))
    pages: list[Page] = []
    for i, (slug, title, doc) in enumerate(sources):
        paragraphs = [p.strip() for p in re.split(r"\n\s*\n", doc) if p.strip()]
        body = "\n".join(f"      <p>{html.escape(' '.join(p.split()))}</p>" for p in paragraphs)
        links = [(s, t) for s, t, _ in (sources[(i + k) % len(sources)] for k in (1, 2, 3)) if s != slug]
        pages.append(Page(slug, title, render(slug, title, body, links), doc))
    for path in sorted(PAGES.glob("*.html")):
        raw = path.read_text(encoding="utf-8")
        title_match = re.search(r"<title>(.*?)</title>", raw, re.S)
        _, text = html_to_text(raw)
        pages.append(Page(path.stem, html.unescape(title_match.group(1)) if title_match else path.stem, raw, text))
    return pages


class Index:
    """SQLite FTS5 over the pages' titles and texts, ranked by bm25."""

    def __init__(self, pages: list[Page]) -> None:
        self.db = sqlite3.connect(":memory:", check_same_thread=False)
        self.db.execute("CREATE VIRTUAL TABLE pages USING fts5(slug UNINDEXED, title, body, tokenize='porter')")
        self.db.executemany("INSERT INTO pages VALUES (?, ?, ?)", [(p.slug, p.title, p.text) for p in pages])
        self.pages = {p.slug: p for p in pages}

    def search(self, query: str, limit: int = 5) -> list[dict[str, str]]:
        """Pages matching any of the query's words, best first (title words weigh double)."""
        words = _WORD.findall(query)
        if not words:
            return []
        match = " OR ".join(f'"{w}"' for w in words)  # quoted: the user's words are never FTS syntax
        rows = self.db.execute(
            "SELECT slug, title, snippet(pages, 2, '', '', ' ... ', 24) FROM pages WHERE pages MATCH ? "
            "ORDER BY bm25(pages, 0.0, 2.0, 1.0) LIMIT ?",
            (match, limit),
        ).fetchall()
        return [{"title": t, "url": f"/wiki/{s}.html", "snippet": snip} for s, t, snip in rows]
