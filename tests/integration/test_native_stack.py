"""Each protocol on its own wire on the compose stack: runs through the API with
``--transport native`` (the relay in the network container, each agent in its own), and the
SDKs' own clients calling an agent of the stack as their users would."""

from __future__ import annotations

import json
import subprocess

import pytest

from ..conftest import ROOT
from .conftest import Stack

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("protocol", ["anp", "mcp"])
def test_a_native_run_through_the_api_crosses_containers_on_the_protocols_own_wire(stack: Stack, protocol: str) -> None:
    # anp: every agent resolves the relay's DID document over HTTPS from the network container;
    # mcp: the agents answer callers that name them by their service's name.
    code, output, m, _ = stack.run(f"native-{protocol}", "--task", "solar-farm", "--protocol", protocol,
                                   "--transport", "native")  # fmt: skip
    assert code == 0, output
    assert m["status"] == "ok" and m["transport"] == "native" and m["protocol"] == protocol, m.get("error")
    assert m["prediction"] and m["layers"]["requests"] > 0 and m["layers"]["refused"] == 0
    assert m["layers"]["segs_out"] > 0  # the kernel counted the container network's side


def test_the_sdks_own_clients_call_an_agent_of_the_stack(stack: Stack) -> None:
    script = (ROOT / "tests" / "integration" / "sdk_clients.py").read_text()
    proc = subprocess.run(
        ["docker", "compose", "-p", stack.project, "--env-file", str(stack.env_file), "exec", "-T", "network",
         "python", "-", "http://agent-search:10000"],
        cwd=ROOT, env=stack.env, input=script, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    answers = {line["sdk"]: line["frames"] for line in lines}
    assert sorted(answers) == ["a2a", "acp", "mcp"]
    for sdk, frames in answers.items():
        (frame,) = frames
        assert frame["type"] == "search_docs" and frame["src"] == "0", (sdk, frame)
        assert frame["payload"]["passages"], (sdk, frame)  # the search agent's own work on the document
    for line in lines:  # a text request: the passage with the answer's sentence, as text
        assert any("It was opened in 1968" in text for text in line["texts"]), line
