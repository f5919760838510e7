"""``gaiamesh report`` and the bench's printed tables and plot: a run saved twice counts once,
the tables read whole at a terminal's 80 columns, the plot's titles fit and name only what
ran, no matplotlib is a note (not a crash), and a run's summary names its strategy."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from gaiamesh.bench.compare import report
from gaiamesh.bench.compare.rows import BASELINE, collect, csv_row
from gaiamesh.cli import main
from gaiamesh.cli.common import summary_table
from gaiamesh.evaluation.finish import write_metrics
from gaiamesh.evaluation.metrics import RunMetrics

PROTOCOLS = ["json", "binary", "compressed", "signed", "a2a", "anp", "acp", "agora"]


def metrics(run_id: str, protocol: str = "a2a", strategy: str = "pipeline", **kw: Any) -> RunMetrics:
    fields: dict[str, Any] = {"task_id": "solar-farm", "bytes_tx": 16446, "bytes_rx": 9000, "quality_score": 1.0,
                              "elapsed_ms": 24000.0, "llm_ms": 20000.0} | kw  # fmt: skip
    return RunMetrics(status="ok", question="q?", answer="148 megawatts", model="m", run_id=run_id,
                      protocol=protocol, strategy=strategy, **fields)  # fmt: skip


def test_a_run_saved_beside_the_services_own_folder_counts_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = metrics("4f0c1d2e3a4b5c6d")
    for folder in ["runs/4f0c1d2e3a4b5c6d", "default"]:  # the service's own, and `submit --out`'s copy
        (tmp_path / folder).mkdir(parents=True)
        write_metrics(run, tmp_path / folder)
    other = tmp_path / "runs" / "0a0b0c0d0e0f0a0b"
    other.mkdir()
    write_metrics(metrics("0a0b0c0d0e0f0a0b"), other)
    rows = collect(tmp_path)
    assert len(rows) == 2 and sorted(r["run_id"] for r in rows) == ["0a0b0c0d0e0f0a0b", "4f0c1d2e3a4b5c6d"]
    assert sorted(r["repeat"] for r in rows) == [1, 2]
    assert "skipped 1 duplicate run" in capsys.readouterr().out
    assert report.summarize(rows)["a2a"]["runs"] == 2


def rendered(tables: list[Any], width: int = 80) -> str:
    out = Console(width=width, file=io.StringIO(), color_system=None)
    for table in tables:
        out.print(table)
    return out.file.getvalue()  # type: ignore[attr-defined]


def groups(strategies: list[str]) -> list[dict[str, Any]]:
    rows = []
    for s in strategies:
        for p in PROTOCOLS:
            for task in ("solar-farm", "glass-museum"):
                m = metrics(f"{s[:4]}{p}{task[:5]}", p, s, task_id=task)
                rows.append(csv_row(1, m))
    return rows


@pytest.mark.parametrize("strategies", [["pipeline"], ["pipeline", "orchestrated"]])
def test_the_printed_tables_read_whole_at_80_columns(strategies: list[str]) -> None:
    from gaiamesh.bench import stats

    rows = groups(strategies)
    summary = report.summarize(rows)
    group_of = report.labeler(rows)
    means, diffs = stats.intervals(rows, group_of), stats.differences(rows, group_of)
    text = rendered([*report.summary_tables(summary, 80), *report.intervals_tables(means, diffs, 80)])
    assert "…" not in text  # nothing cut to an ellipsis
    assert max(len(line) for line in text.splitlines()) <= 80
    lines = text.splitlines()
    for group in summary:  # every group's name whole, on one line of its own row
        assert any(f" {group} " in line for line in lines), group
    for header in ["runs", "ok", *report.SHORT.values(), "quality - json", "bytes - json"]:
        assert f" {header} " in text, header  # every column's header whole too
    assert "16,446" in text and "1.000 [1.000, 1.000]" in text  # the cells too


def test_a_wide_terminal_keeps_one_table() -> None:
    summary = report.summarize(groups(["pipeline"]))
    assert len(report.summary_tables(summary, 400)) == 1 and len(report.summary_tables(summary, 80)) > 1


def test_the_quality_title_names_the_baseline_only_when_one_ran_and_every_title_fits() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    assert "baseline" not in report.quality_title(["json", "a2a"])
    assert "baseline" in report.quality_title(["json", BASELINE])
    rows = groups(["pipeline"])
    base = {**rows[0], "protocol": BASELINE}
    for with_baseline in (rows, [*rows, base]):
        summary = report.summarize(with_baseline)
        fig = report.figure(summary)
        try:
            fig.canvas.draw()
            width = fig.bbox.width
            titles = [ax.title for ax in fig.axes]
            quality = fig.axes[3].title.get_text()
            assert ("baseline" in quality) == (BASELINE in summary)
            for title in titles:  # inside the figure, not cut at its edge
                box = title.get_window_extent()
                assert box.x0 >= 0 and box.x1 <= width, (title.get_text(), box.x0, box.x1, width)
        finally:
            plt.close(fig)


def test_the_tallest_bar_stands_below_its_axis_top_and_clear_of_the_legend() -> None:
    """comparison.png: the json bytes bar, the tallest, ran up under the legend at the axis' top."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = (("json", 90_000, 9_000.0), ("binary", 30_000, 8_000.0), ("a2a", 60_000, 8_500.0))
    rows = [csv_row(1, metrics(f"r{p}", p, bytes_tx=b, header_overhead=b // 10, elapsed_ms=ms, llm_ms=ms * 0.8))
            for p, b, ms in runs]  # fmt: skip
    fig = report.figure(report.summarize(rows))
    try:
        fig.canvas.draw()
        for ax in fig.axes[:2]:  # bytes on the wire, time per run: the panels with a legend
            tallest = max(bar.get_y() + bar.get_height() for bar in ax.patches)
            assert ax.get_ylim()[1] >= 1.1 * tallest, (ax.get_title(), ax.get_ylim(), tallest)
            legend, box = ax.get_legend().get_window_extent(), ax.get_window_extent()
            assert not [bar for bar in ax.patches if legend.overlaps(bar.get_window_extent())], ax.get_title()
            assert box.x0 <= legend.x0 and legend.x1 <= box.x1 and legend.y1 <= box.y1, ax.get_title()
    finally:
        plt.close(fig)


def test_report_without_matplotlib_writes_its_tables_and_says_the_plot_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "runs" / "r1").mkdir(parents=True)
    write_metrics(metrics("r1"), tmp_path / "runs" / "r1")
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` fails, as where it is not installed
    assert main(["report", str(tmp_path / "runs"), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr()
    assert (tmp_path / "out" / "summary.md").is_file() and (tmp_path / "out" / "results.csv").is_file()
    assert not (tmp_path / "out" / "comparison.png").exists()
    notes = [line for line in out.out.splitlines() if "matplotlib" in line]
    assert len(notes) == 1 and "comparison.png" in notes[0] and "Traceback" not in out.err


def test_a_runs_summary_names_its_strategy_and_protocol() -> None:
    title = str(summary_table(metrics("r1", "anp", "orchestrated"), "gaiamesh run").title)
    assert title == "gaiamesh run · solar-farm · orchestrated · anp"
    baseline = metrics("r2", mode="baseline")
    assert str(summary_table(baseline, "gaiamesh baseline").title) == "gaiamesh baseline · solar-farm"
