"""Replay windows and nonce caches (mesh/freshness.py), by plain calls with a given clock."""

from __future__ import annotations

from gaiamesh.mesh.freshness import Freshness


def test_a_nonce_is_taken_once_within_the_window() -> None:
    f = Freshness(window_s=10)
    assert f.refusal("a", b"n1", made_s=100.0, now_s=101.0) is None
    assert "replayed" in str(f.refusal("a", b"n1", made_s=100.0, now_s=102.0))
    assert f.refusal("b", b"n1", made_s=100.0, now_s=102.0) is None  # another signer's nonce


def test_stale_and_future_messages_are_refused() -> None:
    f = Freshness(window_s=10)
    assert "stale" in str(f.refusal("a", b"n", made_s=100.0, now_s=110.5))
    assert "future" in str(f.refusal("a", b"n", made_s=120.0, now_s=100.0))
    assert len(f) == 0  # refused messages leave nothing behind


def test_the_cache_forgets_what_can_no_longer_be_fresh_and_is_bounded() -> None:
    f = Freshness(window_s=10, limit=3)
    for i in range(3):
        assert f.refusal("a", bytes([i]), made_s=100.0, now_s=100.0) is None
    assert "too many" in str(f.refusal("a", b"x", made_s=100.0, now_s=100.0))
    # 11 s on, the three are stale: forgotten, and room for new ones; the old ones stay refused
    assert f.refusal("a", b"x", made_s=111.0, now_s=111.0) is None and len(f) == 1
    assert "stale" in str(f.refusal("a", bytes([0]), made_s=100.0, now_s=111.0))


def test_a_fresh_copy_keeps_the_window_and_nothing_seen() -> None:
    f = Freshness(window_s=5)
    f.refusal("a", b"n", made_s=1.0, now_s=1.0)
    g = f.fresh_copy()
    assert g.window_s == 5 and len(g) == 0 and g.refusal("a", b"n", made_s=1.0, now_s=1.0) is None
