"""The suite on two cores at once (pytest-xdist, `make test`: ``-n 2``). Much of it waits (on
containers starting, on swarm rescheduling, on runs replayed at their recorded pace), and what
one worker waits on the other fills.

- Work is handed out by module, so a module's fixtures are made once; the compose suite
  (tests/integration) and the swarm suite (tests/swarm) are each one unit, so each brings its
  stack up once, on one worker.
- The compose suite and the swarm suite are handed out first, one to each worker: each is one
  long unit, and neither may be the last to start (swarm after the end-to-end tests took 24 min
  35 s in all, both first 22 min 38 s: docs/results/2026-12-04-test-times.md). The live
  recording both hold their runs to is begun at once in a thread (tests/conftest.py). The unit
  tests, many short modules, go last: they even out the two workers' ends.
- Each worker picks free ports from a range of its own (GAIAMESH_PORTS), inherited by every
  command it starts, so that two workers never hand out the same port.
- The model servers and the live recording are shared by the workers (tests/shared.py)."""

from __future__ import annotations

import os

import pytest

from . import shared

# The order in which phases are collected, and so handed out: alone, unit tests first (a broken
# build fails in a minute); in parallel, as above.
ORDER = ("unit", "model", "e2e", "api", "browser", "integration", "swarm")
ORDER_PARALLEL = ("integration", "swarm", "e2e", "browser", "api", "model", "unit")
DOCKER_SUITES = ("integration", "swarm")
PORTS = (10000, 32000)  # below the kernel's ephemeral range (32768 here and by default)


def phase_of(nodeid: str) -> str:
    parts = nodeid.split("::", 1)[0].split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "tests" else "other"


def worker(config: pytest.Config) -> tuple[int, int] | None:
    """(this worker's index, the number of workers), or None outside xdist's workers."""
    info = getattr(config, "workerinput", None)
    return (int(info["workerid"].removeprefix("gw")), int(info["workercount"])) if info else None


def parallel(config: pytest.Config) -> bool:
    return worker(config) is not None or bool(getattr(config.option, "numprocesses", None))


def pytest_configure(config: pytest.Config) -> None:
    if (me := worker(config)) is not None:
        index, count = me
        width = (PORTS[1] - PORTS[0]) // count
        os.environ["GAIAMESH_PORTS"] = f"{PORTS[0] + index * width}-{PORTS[0] + (index + 1) * width}"
    elif shared.begin():
        config.add_cleanup(shared.end)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    order = ORDER_PARALLEL if parallel(config) else ORDER
    rank = {name: i for i, name in enumerate(order)}
    items.sort(key=lambda it: rank.get(phase_of(it.nodeid), len(order)))  # stable: files keep their order


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    from xdist.scheduler import LoadScopeScheduling

    class ByModule(LoadScopeScheduling):
        """Units: one per module, the docker suites one each, in collection order."""

        def _split_scope(self, nodeid: str) -> str:
            phase = phase_of(nodeid)
            return f"tests/{phase}" if phase in DOCKER_SUITES else nodeid.split("::", 1)[0]

    config.option.loadscopereorder = False
    return ByModule(config, log)
