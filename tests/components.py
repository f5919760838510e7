"""Which tests use which real component, counted from their fixtures:
``PYTHONPATH=. pytest --collect-only -q -p tests.components`` prints a table (docs/development.md), so that a
change to the suite shows it left every real component its tests. Tests that start a component
themselves (``make bench``'s own stack, ``gaiamesh run`` starting the bundled model server) are
not counted here: their names say so."""

from __future__ import annotations

import pytest

COMPONENTS = {
    "the real model on our server, every answer computed": {"live_model_server"},
    "the real model on our server, a repeated request from memory": {"model_server"},
    "llama-cpp-python's server (not ours)": {"openai_server"},
    "the compose stack (its containers)": {"stack"},
    "a swarm of Docker engines": {"engines", "swarm", "first_deploy"},
    "Chromium": {"browser"},
    "the live recording, replayed": {"recorded"},
}


def pytest_collection_finish(session: pytest.Session) -> None:
    counts = {name: 0 for name in COMPONENTS}
    for item in session.items:
        used = set(getattr(item, "fixturenames", ()))
        for name, fixtures in COMPONENTS.items():
            counts[name] += bool(used & fixtures)
    print(f"\n{len(session.items)} tests; by the real components their fixtures start:")
    for name, n in counts.items():
        print(f"  {n:4d}  {name}")
