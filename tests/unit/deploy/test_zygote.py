"""Agents forked from one warm process (deploy/zygote.py): each child is `gaiamesh <args>` in the
environment, working folder and log it was given, and the group sees it as a Popen: its pid,
its exit code (-signal when killed), wait with a timeout, signals; closing the zygote stops the
children still running and tells their ends. Real processes, real commands of this package."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from gaiamesh.deploy.local import ProcessGroup, free_port, wait_until_answers
from gaiamesh.deploy.zygote import Forked, Zygote
from gaiamesh.errors import RunError
from gaiamesh.settings import AgentSpec, Settings


@pytest.fixture
def zygote(tmp_path: Path) -> Iterator[Zygote]:
    (tmp_path / "logs").mkdir()
    z = Zygote(tmp_path / "logs" / "zygote.log")
    yield z
    z.close()


def _web(zygote: Zygote, tmp_path: Path, name: str) -> tuple[Forked, str]:
    port = free_port()
    child = zygote.fork(["serve-web", "--port", str(port)], dict(os.environ), tmp_path / "logs" / f"{name}.log")
    url = f"http://127.0.0.1:{port}/health"
    wait_until_answers(url, lambda: None, 60, name)
    return child, url


def test_a_forked_command_has_its_own_environment_folder_and_log(
    zygote: Zygote, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    env = {**os.environ, "KEYS_DIR": "mine"}  # relative: the child's working folder is the caller's
    child = zygote.fork(["keygen", "--nodes", "a"], env, tmp_path / "logs" / "keygen.log")
    assert child.wait(60) == 0 and child.poll() == 0
    assert (tmp_path / "mine" / "a.pem").is_file()
    assert "wrote Ed25519 key pairs for a" in (tmp_path / "logs" / "keygen.log").read_text()


def test_exit_codes_are_popen_s_and_a_wait_can_time_out(zygote: Zygote, tmp_path: Path) -> None:
    bad = zygote.fork(["no-such-command"], dict(os.environ), tmp_path / "logs" / "bad.log")
    assert bad.wait(60) == 2  # argparse's, as `gaiamesh no-such-command` exits
    assert "invalid choice: 'no-such-command'" in (tmp_path / "logs" / "bad.log").read_text()
    web, url = _web(zygote, tmp_path, "web")
    assert web.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        web.wait(0.2)
    web.kill()
    assert web.wait(10) == -9
    with pytest.raises(httpx.HTTPError):
        httpx.get(url, timeout=2)


def test_closing_the_zygote_stops_its_children_and_tells_their_ends(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    z = Zygote(tmp_path / "logs" / "zygote.log")
    children = [_web(z, tmp_path, f"web-{i}") for i in range(2)]
    z.close()
    assert [c.returncode for c, _ in children] == [-15, -15]  # SIGTERM, told before it exited
    for _, url in children:
        with pytest.raises(httpx.HTTPError):
            httpx.get(url, timeout=2)


def test_a_group_forks_agents_by_default_and_execs_them_when_asked(tmp_path: Path) -> None:
    spec = AgentSpec("0", "search", "127.0.0.1", free_port())
    for how, kind in (("fork", "Forked"), ("exec", "Popen")):
        group = ProcessGroup(tmp_path / how)
        settings = Settings(agent_start=how, ollama_host="http://127.0.0.1:1", llm_retry_for=0)
        try:
            name = group.start_agent(settings, spec)
            proc = group.procs[name]
            assert type(proc).__name__ == kind
            assert proc.wait(60) == 1  # no model server: the agent says so in one line and stops
            assert "model server unreachable at http://127.0.0.1:1" in (tmp_path / how / f"{name}.log").read_text()
        finally:
            group.stop_all()


def test_a_dead_zygote_is_a_run_error_naming_its_log(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    z = Zygote(tmp_path / "logs" / "zygote.log")
    try:
        os.kill(z.pid, signal.SIGKILL)
        with pytest.raises(RunError, match=r"zygote did not fork \(exit code -9\); its log: .*zygote\.log"):
            z.fork(["keygen"], dict(os.environ), tmp_path / "logs" / "keygen.log")
    finally:
        z.close()


def test_the_zygote_imports_the_sdks_its_agents_build_at_start() -> None:
    """The protocols an agent builds before it listens are imported once, before the forks (a
    name with no native wire is the agent's to refuse); a fresh interpreter shows what it loads."""
    from gaiamesh.mesh.native import built_at_start

    assert built_at_start("a2a, mcp", "mcp", "native") == ["a2a", "mcp"]
    assert built_at_start("", "acp", "relay") == [] and built_at_start("", "acp", "native") == ["acp"]
    probe = ("import sys; from gaiamesh.deploy.zygote import _preload_native; "
             "_preload_native(['--logs', 'x', '--native', 'mcp,nosuch']); "
             "print('gaiamesh.mesh.protocols.mcp.binding' in sys.modules, 'mcp.client.session' in sys.modules)")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})  # fmt: skip
    assert done.returncode == 0 and done.stdout.split() == ["True", "True"], done.stderr[-2000:]
