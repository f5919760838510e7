"""HTML to readable text with a real parser (selectolax's lexbor backend): the page's title and
the words of its article, without navigation, scripts, styles, forms or footers."""

from __future__ import annotations

from selectolax.lexbor import LexborHTMLParser

BOILERPLATE = "script, style, noscript, nav, header, footer, aside, form, iframe, svg, .cookie-banner"


def html_to_text(page: str) -> tuple[str, str]:
    """``(title, text)`` of an HTML page."""
    tree = LexborHTMLParser(page)
    title_node = tree.css_first("title")
    title = " ".join(title_node.text().split()) if title_node else ""
    for node in tree.css(BOILERPLATE):
        node.decompose()
    main = tree.css_first("main") or tree.css_first("article") or tree.body
    text = main.text(separator=" ", strip=True) if main is not None else ""
    return title, " ".join(text.split())
