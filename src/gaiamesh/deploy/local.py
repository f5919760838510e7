"""Local mode: the model server, the agents and the relay as separate processes on 127.0.0.1
(beside the compose helpers and the swarm stack, the other ways this package deploys)."""

from __future__ import annotations

import contextlib
import os
import random
import socket
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlparse

import httpx
from rich.console import Console

from ..agents.teams import TEAMS, agent_specs, default_agents
from ..errors import ConfigError, ModelUnreachable, PortTaken, RunError
from ..mesh.admission import new_token
from ..mesh.native import built_at_start
from ..mesh.protocols import KEYED, generate_keys
from ..ports import holder, taken
from ..settings import SECRET_VARIABLES, AgentSpec, MeshSettings, Settings
from ..tasks import Task
from .memory import PeakMemory
from .zygote import Forked, Zygote

console = Console(stderr=True)


def child_env(settings: Settings, **extra: str) -> dict[str, str]:
    """The environment a child process needs to rebuild the same settings."""
    env = dict(os.environ)
    for name, value in settings.model_dump(mode="json", by_alias=True).items():
        if value is not None:
            env[name.upper()] = str(value)
    env.update({k.upper(): v for k, v in extra.items()})
    for name in SECRET_VARIABLES.values():
        if env.get(name):  # the secret itself is passed on: its file (swarm's) would be a second source, refused
            env.pop(f"{name}_FILE", None)
    env["PYTHONUNBUFFERED"] = "1"
    trust = Path(settings.keys_dir) / "local-trust.pem"
    if trust.exists():  # the local CA of anp's DID host (mesh/protocols/anp/didhost.py), with the usual roots
        env["SSL_CERT_FILE"] = str(trust)
    return env


NATIVE_PORT_OFFSET = MeshSettings.model_fields["native_port_offset"].default


def _ephemeral_floor() -> int:
    """The first port the kernel hands to outgoing connections (Linux's default when unreadable)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


PORTS_ENV = "GAIAMESH_PORTS"


def _port_range(top: int) -> tuple[int, int]:
    """Where a block of ``top`` ports may start: within GAIAMESH_PORTS=LOW-HIGH where it is set
    (commands side by side on one machine, each in a range of its own: the test suite's
    workers), else below the kernel's ephemeral range."""
    if spec := os.environ.get(PORTS_ENV, "").strip():
        low, _, high = spec.partition("-")
        if not (low.isdigit() and high.isdigit() and 1024 <= int(low) < int(high) - top <= 65535 - top):
            raise ConfigError(f"{PORTS_ENV}={spec!r}: expected LOW-HIGH, two ports at least {top + 1} apart")
        return int(low), int(high) - top
    floor = _ephemeral_floor()
    return (10000, floor - top) if floor - top > 11000 else (floor, 65000 - top)


def _binds(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


# Ports this process handed out lately. A port is free when checked but only taken when its
# process binds it, which may be seconds later: a second call in between must not hand it out
# again (a CI run lost a service that way, to the native port of an agent started beside it).
# Bounded, so that a long-lived service running many teams never runs out.
_HANDED: deque[int] = deque(maxlen=4096)


def free_port_block(n: int, also: int = NATIVE_PORT_OFFSET) -> int:
    """A base port with ``n`` consecutive ports free on 127.0.0.1 after it, and ``n`` more from
    ``base + also`` (where agents serve their native protocols; 0: none), none of them handed
    out by an earlier call of this process.

    The ports come from below the kernel's ephemeral range: a port from that range, free when
    checked, can become the source port of any outgoing connection before the agent that was
    given it binds it (a CI run lost an agent that way)."""
    top = n + also
    low, high = _port_range(top)
    for _ in range(500):
        base = random.randrange(low, high)
        wanted = [*range(base, base + n), *(range(base + also, base + also + n) if also else ())]
        if not set(wanted) & set(_HANDED) and all(_binds(p) for p in wanted):
            _HANDED.extend(wanted)
            return base
    raise RunError("no block of free ports on 127.0.0.1")


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now and not handed out lately (see :func:`free_port_block`)."""
    return free_port_block(1, also=0)


def check_free(ports: list[int], how_to_move: str, host: str = "127.0.0.1") -> None:
    """Raise :class:`PortTaken` naming the first of ``ports`` held by another program."""
    for port in ports:
        if taken(port, host):
            raise PortTaken(f"port {host}:{port} is held by {holder(port)}: {how_to_move}")


def own_team(settings: Settings, base_port: int = 0) -> Settings:
    """The settings of a team this command starts itself, so that its relay can only ever reach
    the agents it started: a new mesh token (mesh/admission.py); the agents on ``base_port`` and
    after (checked free), or AGENTS where the user set them, or else on free ports; and for the
    orchestrated strategy, its offline web on a free port unless WEB_URL names one."""
    update: dict[str, object] = {"mesh_token": new_token()}
    defaults = {"", *(default_agents(strategy=s) for s in TEAMS)}  # a strategy's team, not the user's
    if base_port or settings.agents in defaults:
        n = len(TEAMS[settings.strategy])
        if base_port:
            check_free(list(range(base_port, base_port + n)), "choose other agent ports with --base-port, or leave "
                       "it out to use free ones")  # fmt: skip
        update["agents"] = default_agents(base_port or free_port_block(n), strategy=settings.strategy)
    else:
        local = [s.port for s in agent_specs(settings) if s.host in ("127.0.0.1", "localhost") and s.external is None]
        check_free(local, "AGENTS names it for an agent this command starts: change AGENTS, or leave it unset")
    if settings.strategy == "orchestrated" and "web_url" not in settings.model_fields_set:
        update["web_url"] = f"http://127.0.0.1:{free_port()}"
    return settings.model_copy(update=update)


def wait_until_answers(url: str, alive: Callable[[], None], timeout: float, what: str) -> None:
    """Poll ``url`` until it answers 200; ``alive`` raises when the child process behind it died.

    Raises :class:`RunError` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        alive()
        try:
            if httpx.get(url, timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RunError(f"{what} did not answer at {url} within {timeout:.0f}s")
        time.sleep(0.2)  # polling a child process for readiness: it gives no other signal


def model_server_up(host: str, timeout: float = 2.0) -> bool:
    try:
        return httpx.get(f"{host.rstrip('/')}/api/version", timeout=timeout).status_code == 200
    except httpx.HTTPError:
        return False


class ProcessGroup:
    """Starts child processes and guarantees they are all stopped on exit."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.procs: dict[str, subprocess.Popen[bytes] | Forked] = {}
        self._zygote: Zygote | None = None  # started with the first agent forked (AGENT_START=fork)

    def start(
        self, name: str, args: list[str], env: dict[str, str], quiet: bool = True
    ) -> subprocess.Popen[bytes]:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        out = (self.log_dir / f"{name}.log").open("wb") if quiet else None
        proc = subprocess.Popen(
            [sys.executable, "-m", "gaiamesh", *args],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT if quiet else None,
        )
        self.procs[name] = proc
        return proc

    def start_agent(self, settings: Settings, spec: AgentSpec, prefix: str = "") -> str:
        """One agent process for ``spec`` (its node id, tool and port, as AGENTS names them);
        returns its name in the group (``<prefix>agent-<node id>``)."""
        name = f"{prefix}agent-{spec.node_id}"
        env = child_env(settings, node_id=spec.node_id, tool=spec.tool, port=str(spec.port))
        if settings.agent_start == "exec":
            self.start(name, ["agent"], env)
            return name
        self.log_dir.mkdir(parents=True, exist_ok=True)
        if self._zygote is None:
            native = built_at_start(settings.native_preload, settings.protocol, settings.transport)
            self._zygote = Zygote(self.log_dir / "zygote.log", native, env.get("SSL_CERT_FILE"))
        self.procs[name] = self._zygote.fork(["agent"], env, self.log_dir / f"{name}.log")
        return name

    def start_team(self, settings: Settings, prefix: str = "", leave_out: frozenset[str] = frozenset()) -> list[str]:
        """An agent process for every agent of AGENTS but those in ``leave_out`` (node ids) and
        the external ones (someone else runs them)."""
        return [self.start_agent(settings, s, prefix) for s in agent_specs(settings)
                if s.node_id not in leave_out and s.external is None]  # fmt: skip

    def check(self, name: str) -> None:
        proc = self.procs[name]
        if proc.poll() is not None:
            tail = (self.log_dir / f"{name}.log").read_text(errors="replace")[-2000:]
            raise RunError(f"{name} exited with code {proc.returncode}:\n{tail}")

    @property
    def zygote_pid(self) -> int | None:
        """The pid of the process the group's agents are forked from, while it runs."""
        return self._zygote.pid if self._zygote is not None else None

    def pids(self) -> list[int]:
        """The pids of the group's processes that still run."""
        return [p.pid for p in self.procs.values() if p.poll() is None]

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + 10
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._zygote is not None:
            self._zygote.close()
            self._zygote = None


@contextlib.contextmanager
def model_server(settings: Settings, group: ProcessGroup) -> Iterator[None]:
    """Reuse a model server answering at ``OLLAMA_HOST``, or start the bundled one. An
    OpenAI-compatible backend is the user's own server: the agents check it when they start."""
    if settings.llm_backend != "ollama" or model_server_up(settings.ollama_host):
        yield
        return
    url = urlparse(settings.ollama_host)
    if url.hostname not in ("127.0.0.1", "localhost"):
        raise ModelUnreachable(
            f"model server unreachable at {settings.ollama_host} (and it is not local, so not started)"
        )
    group.start(
        "model-server",
        ["serve-model", "--host", url.hostname, "--port", str(url.port or 11434)],
        child_env(settings),
    )
    with console.status(
        f"starting the model server at {settings.ollama_host} (loading {settings.model}) ..."
    ):
        try:
            wait_until_answers(
                f"{settings.ollama_host.rstrip('/')}/api/version", lambda: group.check("model-server"), 120,
                "model server",
            )  # fmt: skip
        except RunError as exc:  # it did not start, or died starting: the run cannot reach a model
            raise ModelUnreachable(str(exc)) from exc
    console.print(f"model server ready at {settings.ollama_host}")
    yield


@contextlib.contextmanager
def web_server(settings: Settings, group: ProcessGroup) -> Iterator[None]:
    """The orchestrated strategy's offline web: reuse one answering at ``WEB_URL``, or start
    ``gaiamesh serve-web`` there (pages from ``TASKS_DIR``). The pipeline needs none."""
    health = f"{settings.web_url.rstrip('/')}/health"
    try:
        up = httpx.get(health, timeout=2.0).status_code == 200
    except httpx.HTTPError:
        up = False
    if up or settings.strategy != "orchestrated":
        yield
        return
    url = urlparse(settings.web_url)
    if url.hostname not in ("127.0.0.1", "localhost"):
        raise RunError(f"offline web unreachable at {settings.web_url} (and it is not local, so not started)")
    group.start(
        "web",
        ["serve-web", "--host", url.hostname, "--port", str(url.port or 80), "--tasks-dir", str(settings.tasks_dir)],
        child_env(settings),
    )
    wait_until_answers(health, lambda: group.check("web"), 60, "offline web")
    yield


Watch = Callable[[ProcessGroup, Settings, "subprocess.Popen[bytes]"], None]


def _wait(group: ProcessGroup, settings: Settings, relay: subprocess.Popen[bytes]) -> None:
    relay.wait()


def reap(proc: subprocess.Popen[bytes]) -> float:
    """Wait for ``proc`` to exit; returns the CPU seconds it used (user and system, the kernel's
    own accounting of the process: nothing sampled)."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)  # Popen reads it, and never waits again
    return usage.ru_utime + usage.ru_stime


class RelayWatch:
    """A ``watch`` for :func:`run_local` that keeps the relay's CPU seconds (its start-up too)
    and the peak memory of the run's processes (the group's and this one's, PSS)."""

    relay_cpu_s: float | None = None
    memory_peak_mib: float | None = None

    def __call__(self, group: ProcessGroup, settings: Settings, relay: subprocess.Popen[bytes]) -> None:
        with self.measured(group):
            self.relay_cpu_s = reap(relay)

    @contextlib.contextmanager
    def measured(self, group: ProcessGroup) -> Iterator[None]:
        def pids() -> list[int]:  # never poll(): that could reap the relay before reap() does
            try:
                return [os.getpid(), *(p.pid for p in tuple(group.procs.values()))]
            except RuntimeError:  # a process started meanwhile (a storm's restart): the next sample
                return []

        with PeakMemory(pids) as peak:
            yield
        self.memory_peak_mib = round(peak.peak_mib, 1)


def run_local(settings: Settings, task: Task, out: Path, base_port: int, watch: Watch = _wait) -> Path:
    """Run the whole mesh once on ``task``; returns the path of the ``metrics.json`` the relay
    wrote (``evaluation/`` reads it: processes are this room's, a run's schema is not). ``watch`` runs
    while the run does and returns when the relay has exited (a storm kills agents meanwhile)."""
    out.mkdir(parents=True, exist_ok=True)
    settings = own_team(settings, base_port)
    if settings.protocol in KEYED or settings.wire_tls != "off":
        # Fresh key pairs (and wire certificates) for this run; each process loads only its own.
        nodes = ["network", *(a.node_id for a in agent_specs(settings))]
        settings = settings.model_copy(update={"keys_dir": generate_keys(out / "keys", nodes)})
    group = ProcessGroup(out / "logs")
    try:
        with model_server(settings, group), web_server(settings, group):
            group.start_team(settings)
            relay = group.start(
                "relay",
                ["relay", "--no-summary"],
                child_env(settings, task=str(task.path), out_dir=str(out)),
                quiet=False,
            )
            watch(group, settings, relay)
            if relay.returncode:  # an agent that could not start says why (a port taken, say)
                for name in [n for n in group.procs if n != "relay"]:
                    group.check(name)
    finally:
        group.stop_all()
    metrics_path = out / "metrics.json"
    if not metrics_path.is_file():
        raise RunError(f"the relay exited with code {relay.returncode} without writing {metrics_path}")
    return metrics_path
