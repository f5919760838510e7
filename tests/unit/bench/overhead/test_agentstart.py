"""The agent start-up bench's summary: medians per way, exec/fork paired round by round, and a
ratio whose range holds 1 said to be within noise."""

from __future__ import annotations

from gaiamesh.bench.overhead.agentstart import summary


def _round(fork: tuple[float, float], exec_: tuple[float, float]) -> list[dict[str, float | str]]:
    return [{"way": "fork", "wall_s": fork[0], "cpu_s": fork[1]}, {"way": "exec", "wall_s": exec_[0], "cpu_s": exec_[1]}]


def test_ratios_are_paired_by_round_and_a_range_holding_one_is_noise() -> None:
    rows = [*_round((1.0, 2.0), (1.5, 6.0)), *_round((2.0, 2.0), (1.0, 5.0)), *_round((1.0, 1.0), (1.2, 4.0))]
    s = summary(rows)
    assert s["cpu_s"] == {"fork": 2.0, "exec": 5.0, "ratio_median": 3.0, "ratio_min": 2.5, "ratio_max": 4.0,
                          "within_noise": False}  # fmt: skip
    assert s["wall_s"]["ratio_min"] == 0.5 and s["wall_s"]["ratio_median"] == 1.2 and s["wall_s"]["within_noise"] is True
