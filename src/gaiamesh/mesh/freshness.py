"""Replay protection: a message is taken once, and only while it is fresh.

A signed message names the time it was made and a random nonce, both under its signature. The
receiver takes it when it was made within ``window_s`` of its own clock (either side: clocks
drift) and its (signer, nonce) has not been seen; it then remembers the nonce until the message
would be stale anyway, so the cache holds at most the nonces of one window (and refuses past
``limit`` rather than forget one that is still fresh). Pure code: the caller gives the time.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from dataclasses import dataclass, field

DEFAULT_WINDOW_S = 60.0
DEFAULT_LIMIT = 1_000_000


@dataclass
class Freshness:
    """One receiver's window and the nonces it has taken."""

    window_s: float = DEFAULT_WINDOW_S
    limit: int = DEFAULT_LIMIT
    clock: Callable[[], float] = time.time
    _seen: set[tuple[str, bytes]] = field(default_factory=set, repr=False)
    _expiry: list[tuple[float, tuple[str, bytes]]] = field(default_factory=list, repr=False)

    def refusal(self, signer: str, nonce: bytes, made_s: float, now_s: float | None = None) -> str | None:
        """Why the message ``signer`` made at ``made_s`` (seconds since the epoch) with ``nonce``
        is refused, or None when it is taken (and its nonce is then remembered)."""
        now = self.clock() if now_s is None else now_s
        age = now - made_s
        if age > self.window_s:
            return f"stale: made {age:.1f} s ago, outside the {self.window_s:g} s replay window"
        if -age > self.window_s:
            return f"made {-age:.1f} s in the future, outside the {self.window_s:g} s replay window"
        self._forget(now)
        key = (signer, nonce)
        if key in self._seen:
            return f"replayed: nonce {nonce.hex()[:16]} from {signer!r} was already taken"
        if len(self._seen) >= self.limit:
            return f"too many messages within the replay window ({self.limit})"
        self._seen.add(key)
        heapq.heappush(self._expiry, (made_s + self.window_s, key))
        return None

    def _forget(self, now: float) -> None:
        # A nonce whose message is stale now can never be taken again: its entry is no longer needed.
        while self._expiry and self._expiry[0][0] < now:
            self._seen.discard(heapq.heappop(self._expiry)[1])

    def fresh_copy(self) -> Freshness:
        """The same window with nothing seen yet (a new connection's own cache)."""
        return Freshness(self.window_s, self.limit, self.clock)

    def __len__(self) -> int:
        return len(self._seen)
