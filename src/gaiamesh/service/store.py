"""The service's state in SQLite (stdlib ``sqlite3``, WAL): runs, sessions and their messages.

A run's row indexes it (state, times, the request); its metrics are its ``metrics.json`` in the
run's folder, the one copy (a database made by an earlier version keeps an unused column).

One connection, used from the event loop's thread only; every write is one short transaction,
so a killed service loses nothing that was written and never leaves half a change.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    session_id TEXT,
    state TEXT NOT NULL,
    request TEXT NOT NULL,
    task_id TEXT NOT NULL,
    question TEXT NOT NULL,
    created REAL NOT NULL,
    started REAL,
    finished REAL,
    error TEXT
);
CREATE INDEX IF NOT EXISTS runs_by_session ON runs (session_id);
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    created REAL NOT NULL,
    source TEXT NOT NULL,
    dropped INTEGER NOT NULL DEFAULT 0,
    autochat TEXT
);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    type TEXT NOT NULL,
    run_id TEXT,
    content TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_by_session ON messages (session_id, id);
"""


class Store:
    """Rows in, rows out; the service's models are built by its callers."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)

    def close(self) -> None:
        self.db.close()

    # --- runs ------------------------------------------------------------------------------
    def add_run(self, run_id: str, session_id: str | None, request: dict[str, Any], task_id: str, question: str) -> None:
        self.db.execute(
            "INSERT INTO runs (id, session_id, state, request, task_id, question, created) VALUES (?,?,?,?,?,?,?)",
            (run_id, session_id, "queued", json.dumps(request), task_id, question, time.time()),
        )

    def set_run(self, run_id: str, **fields: Any) -> None:
        cols = ", ".join(f"{k} = ?" for k in fields)
        self.db.execute(f"UPDATE runs SET {cols} WHERE id = ?", (*fields.values(), run_id))  # noqa: S608

    def run(self, run_id: str) -> sqlite3.Row | None:
        row: sqlite3.Row | None = self.db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        return row

    def runs(self, session_id: str | None = None) -> list[sqlite3.Row]:
        if session_id is None:
            return list(self.db.execute("SELECT * FROM runs ORDER BY created"))
        return list(self.db.execute("SELECT * FROM runs WHERE session_id = ? ORDER BY created", (session_id,)))

    def unfinished_runs(self) -> list[sqlite3.Row]:
        return list(self.db.execute("SELECT * FROM runs WHERE state IN ('queued', 'running') ORDER BY created"))

    # --- sessions and messages -------------------------------------------------------------
    def add_session(self, session_id: str, source: dict[str, Any]) -> None:
        self.db.execute(
            "INSERT INTO sessions (id, state, created, source) VALUES (?,?,?,?)",
            (session_id, "INIT", time.time(), json.dumps(source)),
        )

    def session(self, session_id: str) -> sqlite3.Row | None:
        row: sqlite3.Row | None = self.db.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return row

    def sessions(self) -> list[sqlite3.Row]:
        return list(self.db.execute("SELECT * FROM sessions ORDER BY created"))

    def set_autochat(self, session_id: str, autochat: dict[str, Any] | None) -> None:
        self.db.execute(
            "UPDATE sessions SET autochat = ? WHERE id = ?", (json.dumps(autochat) if autochat else None, session_id)
        )

    def set_session_state(self, session_id: str, state: str) -> None:
        self.db.execute("UPDATE sessions SET state = ? WHERE id = ?", (state, session_id))

    def add_message(self, session_id: str, mtype: str, content: dict[str, Any], run_id: str | None, cap: int) -> None:
        """Append a message; keep the newest ``cap`` and count the ones dropped."""
        with self.db:  # one transaction: the insert and the trimming land together
            self.db.execute("BEGIN")
            self.db.execute(
                "INSERT INTO messages (session_id, type, run_id, content, created) VALUES (?,?,?,?,?)",
                (session_id, mtype, run_id, json.dumps(content), time.time()),
            )
            over = self.db.execute(
                "SELECT id FROM messages WHERE session_id = ? ORDER BY id DESC LIMIT -1 OFFSET ?", (session_id, cap)
            ).fetchall()
            if over:
                self.db.execute(
                    f"DELETE FROM messages WHERE id IN ({','.join('?' * len(over))})",  # noqa: S608
                    [r["id"] for r in over],
                )
                self.db.execute("UPDATE sessions SET dropped = dropped + ? WHERE id = ?", (len(over), session_id))

    def messages(self, session_id: str) -> list[sqlite3.Row]:
        return list(self.db.execute("SELECT * FROM messages WHERE session_id = ? ORDER BY id", (session_id,)))
