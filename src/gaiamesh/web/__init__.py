"""The offline web of the orchestrated strategy: a small site of HTML pages and a search
endpoint (SQLite FTS5, bm25), served by ``gaiamesh serve-web`` (compose: the ``web`` service)."""
