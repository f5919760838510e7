from gaiamesh.agents.catalog import subscriptions
from gaiamesh.mesh.routing import Router, RoutingMode, resolve_mode

FOUR = [("0", "search"), ("1", "extract"), ("2", "triple"), ("3", "reason")]
EIGHT = FOUR + [("4", "search"), ("5", "extract"), ("6", "triple"), ("7", "reason")]


def test_broadcast_sends_to_all_others() -> None:
    r = Router(RoutingMode.BROADCAST, FOUR, subscriptions())
    assert r.destinations("search_docs", "0") == ["1", "2", "3"]
    assert r.destinations("doc_init", "network") == ["0", "1", "2", "3"]


def test_topic_sends_to_subscribers_only() -> None:
    r = Router(RoutingMode.TOPIC, FOUR, subscriptions())
    assert r.destinations("search_docs", "0") == ["1"]
    assert r.destinations("triples", "2") == ["3"]
    assert r.destinations("data_event", "3") == []


def test_share_picks_one_member_per_group_rotating_over_stages() -> None:
    r = Router(RoutingMode.SHARE, EIGHT, subscriptions())
    assert r.destinations("doc_init", "network") == ["0"]
    assert r.destinations("search_docs", "0") == ["5"]
    assert r.destinations("events", "5") == ["2"]
    assert r.destinations("triples", "2") == ["7"]


def test_share_starts_where_it_is_told_so_successive_runs_reach_every_replica() -> None:
    first = [Router(RoutingMode.SHARE, EIGHT, subscriptions(), start=k).destinations("doc_init", "network")
             for k in range(4)]  # fmt: skip
    assert first == [["0"], ["4"], ["0"], ["4"]]


def test_dead_agents_are_deregistered() -> None:
    r = Router(RoutingMode.SHARE, EIGHT, subscriptions())
    r.remove("1")
    assert r.destinations("search_docs", "0") == ["5"]
    assert r.destinations("search_docs", "0") == ["5"]
    assert r.group_alive("extract")
    r.remove("5")
    assert not r.group_alive("extract")
    assert r.destinations("search_docs", "0") == []


def test_auto_mode() -> None:
    assert resolve_mode(RoutingMode.AUTO, ["search", "extract"]) is RoutingMode.BROADCAST
    assert resolve_mode(RoutingMode.AUTO, ["search", "search"]) is RoutingMode.SHARE
    assert Router(RoutingMode.AUTO, EIGHT, subscriptions()).mode is RoutingMode.SHARE
