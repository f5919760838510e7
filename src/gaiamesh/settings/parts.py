"""The settings' parts, one model per concern (the model, the wire, faults, tools, one agent,
folders, one run, the service): code that reads one concern declares that part, and
:class:`~gaiamesh.settings.Settings` is all of them at once."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Literal, get_args
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..errors import ConfigError


class RoutingMode(StrEnum):
    """Who receives a packet (``ROUTING``; ``mesh.routing`` decides by it)."""

    BROADCAST = "broadcast"
    TOPIC = "topic"
    SHARE = "share"
    AUTO = "auto"


# The strategies a run may answer with; each one's team is declared in agents/teams.py.
Strategy = Literal["pipeline", "orchestrated", "stream"]
STRATEGIES: tuple[str, ...] = get_args(Strategy)
# The strategies that answer one task a run; `stream` answers a file of items (`gaiamesh stream`).
TASK_STRATEGIES: tuple[str, ...] = ("pipeline", "orchestrated")


class ModelSettings(BaseModel):
    """The model server the agents ask, and how they ask it."""

    # ollama: Ollama's native API (our bundled server, or an official Ollama) at OLLAMA_HOST;
    # openai: an OpenAI-compatible server at OPENAI_BASE_URL (vLLM, llama.cpp, LM Studio, hosted).
    # replay: the answers recorded in earlier runs under REPLAY_FROM, no model server at all.
    llm_backend: Literal["ollama", "openai", "replay"] = "ollama"
    replay_from: Path | None = None
    # instant: a replayed call answers at once (a comparison of protocols in minutes); recorded:
    # it takes the time the model took (storms and faults meet runs of their real length).
    replay_pace: Literal["instant", "recorded"] = "instant"
    ollama_host: str = "http://127.0.0.1:11434"
    openai_base_url: str = ""  # as the openai client names it, e.g. http://127.0.0.1:8000/v1
    openai_api_key: str = ""  # a secret: .env only, never in a log, frame, archive or metrics.json
    model: str = "gemma3:270m"
    # base: raw completions with few-shot prompts; chat: system and user messages in the model's
    # own template; auto: Ollama's /api/show template decides, an OpenAI-compatible server is chat.
    model_kind: Literal["auto", "base", "chat"] = "auto"
    model_path: Path | None = None  # GGUF served by `gaiamesh serve-model`; None = bundled Gemma 3 270M
    model_threads: int = 2
    model_ctx: int = 4096
    # serve-model answers a request it has answered since it started from memory (engine.py):
    # for test suites, where the model's answers matter and its time does not; never for a bench
    model_memo: bool = False
    llm_temperature: float = 0.0
    llm_seed: int = 42
    llm_timeout: float = 120.0
    # Seconds an agent keeps retrying (with back-off) a model server it cannot reach, e.g. one
    # being restarted; keep it below RUN_TIMEOUT. 0: fail the first time.
    llm_retry_for: float = 60.0


class MeshSettings(BaseModel):
    """The wire: which team, which protocol, who receives what, and the relay's limits."""

    strategy: Strategy = "pipeline"
    protocol: str = "json"
    # relay: every protocol's frames ride the relay's WebSocket to each agent; native: each
    # protocol on its own wire (its SDK's server in each agent, its client in the relay, through
    # a counting tap: mesh/native/), docs/protocols.md#each-protocol-on-its-own-wire-transportnative.
    transport: Literal["relay", "native"] = "relay"
    # An agent serves its native protocols on PORT + NATIVE_PORT_OFFSET (the relay reaches it there).
    native_port_offset: int = 1000
    # Protocols (comma-separated) whose native servers an agent builds at start, so that no run's
    # first request pays for loading an SDK; besides PROTOCOL when TRANSPORT=native (bench sets it).
    native_preload: str = ""
    # The name the agents reach the relay by, for the DID host of native anp runs (its did:wba
    # names it; the local CA's certificate covers localhost and network, compose's service name).
    anp_did_hostname: str = "localhost"
    # The store of each agent's ACP server (mesh/protocols/acp/store.py): keyed wakes only the
    # watchers of the run written, as acp-sdk's RedisStore does; memory is acp-sdk's default
    # MemoryStore, whose every write wakes every run's watcher (its cost grows with the runs served).
    acp_store: Literal["keyed", "memory"] = "keyed"
    routing: RoutingMode = RoutingMode.AUTO
    # NODE_ID=TOOL@HOST:PORT,... (parse_agents). Empty: the strategy's own team on 127.0.0.1 from
    # port 9000; each strategy's team is declared in agents/teams.py, which also reads this line.
    agents: str = ""
    chunk_size: int = 400
    run_timeout: float = 300.0
    connect_timeout: float = 60.0
    rejoin_grace: float = 0.0  # seconds a run waits for a tool whose agents are all lost (0: end at once)
    # Seconds between look-ups of AGENTS' dns: names while a run goes on: replicas that appear
    # join the run, lost ones whose address left DNS are let go (0: resolved at the start only).
    discovery_interval: float = 2.0
    max_frame_bytes: int = 1_048_576
    # Packet types each tool consumes, for agents that do not announce theirs when the relay
    # connects: "TOOL=TYPE|TYPE,TOOL=TYPE". Agents of this package announce, so it stays empty.
    topics: str = ""
    # A secret both ends of every relay-agent connection prove they hold (mesh/admission.py), so
    # that a relay only measures the agents its run started. Local commands make a new one each
    # time; compose reads it from .env (make setup writes a random one). Empty: nothing checked.
    mesh_token: str = Field(default="", alias="GAIAMESH_MESH_TOKEN")
    # Seconds a signed message (the relay's handshake challenge, a `signed` or `anp` frame) stays
    # fresh: a copy seen again, or one made longer ago, is refused (mesh/freshness.py). 0: off.
    replay_window_s: float = 60.0
    # TLS on the relay's wire (mesh/wiretls.py): off; tls (each agent proves its node id to the
    # relay with its certificate from the local CA of `make keys`); mtls (the relay proves its
    # own to each agent as well). docs/security.md measures what each stops and costs.
    wire_tls: Literal["off", "tls", "mtls"] = "off"

    @field_validator("chunk_size", "max_frame_bytes")
    @classmethod
    def _positive_sizes(cls, v: int) -> int:
        return _positive(v)

    @field_validator("discovery_interval", "replay_window_s")
    @classmethod
    def _not_negative(cls, v: float) -> float:
        if v < 0:
            raise ValueError("must not be negative (0 turns discovery during a run off)")
        return v

    def topic_table(self) -> dict[str, frozenset[str]]:
        """``TOPICS`` as tool -> consumed packet types; raises ``ConfigError`` on a bad entry."""
        table: dict[str, frozenset[str]] = {}
        for entry in filter(None, (e.strip() for e in self.topics.split(","))):
            tool, sep, types = entry.partition("=")
            if not sep or not tool.strip() or not types.strip():
                raise ConfigError(f"bad TOPICS entry {entry!r}: expected TOOL=TYPE|TYPE")
            table[tool.strip()] = frozenset(t.strip() for t in types.split("|") if t.strip())
        return table


class FaultSettings(BaseModel):
    """Network faults the relay imposes on its links, for benchmarks (``mesh/faults.py``,
    docs/faults.md). All off by default: the relay then sends exactly what it always did."""

    fault_latency_ms: float = 0.0  # added to every crossing of a link, each way
    fault_jitter_ms: float = 0.0  # uniform, plus or minus, around FAULT_LATENCY_MS
    fault_links: str = ""  # node ids whose links get latency and loss, comma-separated ("": all)
    fault_loss: float = 0.0  # share of the relay's copies to agents lost on the way (0 to 1)
    fault_redeliver_after: float = 0.5  # seconds before the relay redelivers a lost copy
    fault_max_redeliveries: int = 8  # lost redeliveries of one copy before the run ends frame_lost
    fault_partition_agent: str = ""  # the node id whose link is cut ...
    fault_partition_at: float = 0.0  # ... from this many seconds into the run ...
    fault_partition_for: float = 0.0  # ... for this many seconds
    fault_slow_agent: str = ""  # the node id whose link is slow ...
    fault_slow_ms: float = 0.0  # ... by this much on every crossing, each way
    fault_seed: int = 1  # the same seed, the same faults

    @field_validator(
        "fault_latency_ms", "fault_jitter_ms", "fault_redeliver_after", "fault_partition_at",
        "fault_partition_for", "fault_slow_ms", "fault_max_redeliveries",
    )  # fmt: skip
    @classmethod
    def _not_negative(cls, v: float) -> float:
        if v < 0:
            raise ValueError("must not be negative")
        return v

    @field_validator("fault_loss")
    @classmethod
    def _share(cls, v: float) -> float:
        if not 0 <= v <= 1:
            raise ValueError("must be between 0 and 1")
        return v


class ToolSettings(BaseModel):
    """What the tools may read: how `reason` chooses, the orchestrated team's plans and limits,
    the offline web and the downloader."""

    max_revisions: int = 2  # revised plans after a failed attempt, before the task fails
    subtask_timeout: float = 120.0  # seconds the orchestrator waits for one sub-task's result
    templates_dir: Path | None = None  # plan templates (*.json); None = the bundled ones
    # Let the model write a plan when no template matches. Off by default: the bundled 270M model
    # writes valid plans that answer worse than the default template (docs/strategies.md).
    model_plans: bool = False
    # What the agents parse (typed answers, triples, the plans the model writes) is asked for
    # under a JSON schema (Ollama's `format`, OpenAI's `response_format`, our server's grammar):
    # `auto`: JSON (plans) where the backend takes a schema (probed at start-up), triples and
    # typed answers too on a chat model; `on`: all of it (an agent whose backend cannot stops
    # at start-up); `off`: none (free text, parsed).
    schemas: Literal["auto", "on", "off"] = "auto"
    # How the pipeline splits a two-fact question: the hop splitter's rules over the question's
    # form, or the model (a split it writes, under a schema where the backend takes one).
    decompose: Literal["rules", "model"] = "rules"
    # Tools whose agents pass their input through unchanged instead of working (comma-separated):
    # `gaiamesh bench --ablate` measures what each pipeline stage adds.
    ablate: str = ""
    # How `reason` picks among valid answers: by the model's likelihood, or by the hand-set
    # weights that came before it (`weights`, which also leaves search's reranking out: no
    # likelihood anywhere); `auto`: likelihood where the backend can score (our /api/score,
    # prompt logprobs on OpenAI-compatible completions), weights where it cannot.
    # `likelihood` asks for scores: an agent whose backend has none stops at start-up.
    # docs/results/2026-11-24-answer-choice.md measures both.
    answer_choice: Literal["auto", "likelihood", "weights"] = "auto"
    # `auto` also weighs what scoring costs: each agent that scores times a short scoring probe
    # at start-up, and where one scored passage would take longer than this (llama-cpp-python's
    # server: about 20 s) it chooses weights (docs/backends.md#log-probabilities).
    score_budget_ms: float = Field(default=5000.0, gt=0)
    replay_plan: Path | None = None  # a saved task_state.json: the orchestrator runs its plan again
    # A stream's coordinator (stream/team.py): the sends of one item before it ends failed (a
    # worker lost, or failing, hands it on). Its workers and policy come with each stream (stream/plan.py).
    stream_max_attempts: int = Field(default=3, ge=1)
    web_url: str = "http://127.0.0.1:8090"  # the offline web (`gaiamesh serve-web`; compose: web)
    download_allow_hosts: str = ""  # hosts file_downloader may reach besides public ones; "" = WEB_URL's
    download_max_bytes: int = 5_242_880
    download_timeout: float = 20.0

    def download_allowlist(self) -> list[str]:
        """Hosts the downloader may reach even when they are not public (the offline web)."""
        hosts = [h.strip() for h in self.download_allow_hosts.split(",") if h.strip()]
        return hosts or [urlsplit(self.web_url).hostname or ""]

    @property
    def ablated(self) -> frozenset[str]:
        """The tools ``ABLATE`` names."""
        return frozenset(t.strip() for t in self.ablate.split(",") if t.strip())


class AgentSettings(BaseModel):
    """One agent process: who it is, which tool it runs, where it listens."""

    node_id: str = "0"
    tool: str = "search"
    agent_host: str = "127.0.0.1"
    port: int = 9000
    # How local mode starts its agents: forked from one process that has imported them once
    # (deploy/zygote.py; a team starts in a fraction of the CPU), or each as a new interpreter.
    agent_start: Literal["fork", "exec"] = "fork"


class PathSettings(BaseModel):
    """Folders: the agents' workspaces, signing keys, results, bundled tasks."""

    workspace_root: Path = Path("workspaces")
    keys_dir: Path = Path("keys")  # Ed25519 keys of `signed` and `anp`: <node_id>.pem + public.json
    out_dir: Path = Path("results")  # runs, and the network service's state (SQLite)
    tasks_dir: Path = Path("tasks")  # bundled tasks a run may name
    stream_tasks_dir: Path = Path("tasks-stream")  # bundled stream sets (NAME.jsonl) a stream may name


class RunSettings(BaseModel):
    """One run from the command line: the task and how its answer is scored."""

    scorer: str = "em_rouge"
    task: Path = Path("tasks/solar-farm")
    task_label: str | None = None  # the task's host path when TASK is a mount point (compose)


class ServiceSettings(BaseModel):
    """The network service (`gaiamesh serve`): its address, secrets and limits."""

    model_config = ConfigDict(populate_by_name=True)

    access_key: str = Field(default="", alias="GAIAMESH_ACCESS_KEY")
    session_secret: str = Field(default="", alias="GAIAMESH_SESSION_SECRET")
    session_ttl: float = 12 * 3600  # seconds a session token stays valid
    service_host: str = "127.0.0.1"
    service_port: int = 8080
    max_concurrent_runs: int = 1
    max_queued_runs: int = 16
    # A run is refused (507) when the results folder has less free space than this: a full disk
    # gets a clear answer before the run starts, not a half-written run.
    min_free_bytes: int = 8 * 1024 * 1024
    max_doc_bytes: int = 262_144
    history_cap: int = 100  # messages kept per session (older ones dropped and counted)
    memory_turns: int = 10  # answered turns that travel with a session's next question
    # MiB a stream's local team may take (0: what the container's memory limit, its cgroup's,
    # leaves free; no limit there, no bound): a stream that would not fit is refused (507).
    stream_memory_mib: int = Field(default=0, ge=0)

    @field_validator("max_concurrent_runs", "max_queued_runs", "max_doc_bytes")
    @classmethod
    def _positive_limits(cls, v: int) -> int:
        return _positive(v)


def _positive(v: int) -> int:
    if v <= 0:
        raise ValueError("must be positive")
    return v
