"""The stream command's harness side by plain calls: which items a source gives (queries, or a
task set's tasks with their documents and answers), the bound on what one doc_init carries, and
the line-up a stream runs with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gaiamesh.bench.stream.run import StreamOptions, collect_items, local_plan, stream_settings, stream_task
from gaiamesh.errors import TaskError
from gaiamesh.settings import RoutingMode, Settings, parse_agents
from gaiamesh.tasks import discover_tasks

ROOT = Path(__file__).resolve().parents[4]
QUERIES = ROOT / "tasks-stream" / "protocolbench-top1000.jsonl"


def test_protocolbench_queries_are_items_without_documents_or_answers() -> None:
    items = collect_items(str(QUERIES), 0, 1 << 20)
    assert len(items) == 1000 and len({i.id for i in items}) == 1000
    assert all(i.doc is None and i.answers == () for i in items)


def test_a_task_set_streams_each_task_with_its_document_and_gold_answers() -> None:
    tasks = discover_tasks(ROOT / "tasks")
    items = collect_items(str(ROOT / "tasks"), 3, 1 << 20)
    assert [(i.id, i.q, i.doc) for i in items] == [(t.task_id, t.question, t.doc) for t in tasks[:3]]
    assert all(i.answers == t.golds for i, t in zip(items, tasks, strict=False))


def test_items_past_one_frame_are_refused_before_the_rest_is_read(tmp_path: Path) -> None:
    big = tmp_path / "many.jsonl"
    with big.open("w") as f:
        for n in range(100_000):
            f.write(json.dumps({"id": n, "q": f"question number {n} about something?"}) + "\n")
        f.write("not json\n")  # never reached: the bound stops the reading first
    with pytest.raises(TaskError, match="do not fit: stream the first N with --limit N"):
        collect_items(str(big), 0, 524_288)
    assert len(collect_items(str(big), 500, 524_288)) == 500


@pytest.mark.parametrize(("text", "words"), [("", "no items"), ('{"id": 1}\n', "q: Field required")])
def test_bad_query_files_get_the_items_reader_s_words(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    with pytest.raises(TaskError, match=words):
        collect_items(str(path), 0, 1 << 20)


def test_the_stream_s_task_and_line_up(tmp_path: Path) -> None:
    items = collect_items(str(QUERIES), 5, 1 << 20)
    options = StreamOptions(tasks=str(QUERIES), workers=3, replay=tmp_path, pace="none", per_worker=2)
    task = stream_task(items, tmp_path / "task", str(QUERIES), local_plan(options))
    assert task.golds == () and task.doc.count("\n") == 6  # the plan, then the items
    assert json.loads(task.doc.splitlines()[0]) == {"plan": {"workers": ["1", "2", "3"], "policy": "dynamic",
                                                             "per_worker": 2}}  # fmt: skip
    settings = stream_settings(Settings(), options, 9100, tmp_path / "ws")
    agents = parse_agents(settings.agents)
    assert [(a.node_id, a.tool, a.port) for a in agents] == [
        ("0", "coordinator", 9100), ("1", "answerer", 9101), ("2", "answerer", 9102), ("3", "answerer", 9103)]
    assert settings.strategy == "stream" and settings.routing is RoutingMode.SHARE
    assert (settings.llm_backend, settings.replay_from, settings.replay_pace) == ("replay", tmp_path, "instant")


def test_a_deployed_team_is_the_coordinator_and_answerers_agents_names_that_are_there(tmp_path: Path) -> None:
    from gaiamesh.bench.stream.run import deployed_team
    from gaiamesh.errors import ConfigError

    agents = ("0=search@127.0.0.1:9000,11=coordinator@127.0.0.1:9011,12=answerer@127.0.0.1:9012,"
              "13=answerer@127.0.0.1:9013,14=answerer@no-such-host.invalid:9014?")  # fmt: skip
    settings = Settings(agents=agents, strategy="stream", connect_timeout=1)
    options = StreamOptions(tasks="q.jsonl", workers=0, team="deployed", policy="round-robin", per_worker=2)
    coordinator, plan = deployed_team(settings, options)
    # the pipeline's agent is not the stream's; an optional answerer whose host is not there is left out
    assert coordinator == "11" and plan.workers == ("12", "13") and (plan.policy, plan.per_worker) == ("round-robin", 2)
    assert deployed_team(settings, options.model_copy(update={"workers": 1}))[1].workers == ("12",)
    with pytest.raises(ConfigError, match="--workers 3: the deployment has 2 answerers"):
        deployed_team(settings, options.model_copy(update={"workers": 3}))
    with pytest.raises(ConfigError, match="0 coordinators and 2 answerers"):
        deployed_team(Settings(agents=agents.replace("coordinator", "search"), strategy="stream"), options)
