"""The offline web's pages, reader and search index, by plain calls."""

from __future__ import annotations

from gaiamesh.web.corpus import Index, build
from gaiamesh.web.reader import html_to_text

from ...conftest import TASKS


def test_task_documents_become_pages_with_boilerplate_the_reader_drops() -> None:
    pages = {p.slug: p for p in build(TASKS)}
    assert "solar-farm" in pages and "tollard-windmill" in pages and len(pages) >= 12
    page = pages["solar-farm"].html
    assert "<nav>" in page and "<script" in page and "cookie" in page and 'href="/wiki/' in page
    title, text = html_to_text(page)
    assert title.endswith("Regional Heritage Wiki")
    assert "148" in text  # the article
    for boilerplate in ("Donate", "cookies", "dataLayer", "Creative Commons", "Related pages"):
        assert boilerplate not in text, boilerplate


def test_hand_written_pages_read_without_their_menus_and_scripts() -> None:
    pages = {p.slug: p for p in build(None)}
    title, text = html_to_text(pages["tollard-windmill"].html)
    assert title == "Tollard Windmill | Mills of the Eastern Fens"
    assert text.startswith("Tollard Windmill Tollard Windmill is a tower mill") and "built in 1814" in text
    assert "Shop" not in text and "track(" not in text and "This site uses cookies" not in text


def test_search_ranks_by_bm25_and_never_parses_the_query_as_syntax() -> None:
    index = Index(build(TASKS))
    hits = index.search("when was the windmill at Tollard built")
    assert hits[0]["url"] == "/wiki/tollard-windmill.html" and hits[0]["snippet"]
    assert index.search("beam engine pumping")[0]["title"].startswith("Saltmarsh Pumping Station")
    # FTS5 operators in a query are searched as words (quoted), never parsed: no error, real hits
    hits = index.search('NEAR("museum" OR) * AND -')
    assert hits and all(h["url"].startswith("/wiki/") for h in hits)
    assert index.search("   ") == [] and index.search("zzzqqq") == []
