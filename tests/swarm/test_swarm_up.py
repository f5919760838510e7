"""`gaiamesh swarm-up` as `make swarm-up` runs it, on an engine with no swarm: it makes one (and
says so), deploys, runs the bundled task through the API, deploys again with a new access key;
swarm-down leaves the swarm it made."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import httpx
import pytest

from gaiamesh.deploy import cluster
from gaiamesh.service.client import answers

from ..conftest import ROOT, recorded_metrics
from .conftest import KEY, Swarm, as_it_was, bring_up, host_state, images, take_down

pytestmark = pytest.mark.swarm

ROTATED = "swarm-suite-rotated-access-key-9876543210"
ONE_NODE = "198.18.252.0/24"  # not the three-node suite's, should both exist at once


def swarm_state(deployed: Swarm) -> str:
    return deployed.docker("info", "--format", "{{.Swarm.LocalNodeState}}").strip()


def test_swarm_up_makes_a_swarm_where_none_is_runs_the_task_and_swarm_down_leaves_it(recorded: Path) -> None:
    before = host_state()
    images()
    spec = cluster.ClusterSpec(name=f"gmtest-{uuid.uuid4().hex[:6]}", nodes=1, subnet=ONE_NODE, checkout=str(ROOT))
    deployed = Swarm(spec, {}, ROOT / "build" / "swarm-test" / spec.name)
    try:
        deployed = bring_up(spec, recorded, swarm=False)
        assert swarm_state(deployed) == "inactive"
        up = deployed.swarm_up()  # no --no-run: step 8 runs the bundled task through the API
        said = up.stdout + up.stderr
        assert up.returncode == 0, said
        assert "none was active; initialised swarm" in said, said
        assert swarm_state(deployed) == "active"
        # one node holds both roles: swarm-up labelled it for the network service and the agents
        labels = json.loads(deployed.docker("node", "inspect", "--format", "{{json .Spec.Labels}}", spec.node(1)))
        assert labels == {"gaiamesh.network": "true", "gaiamesh.agents": "true"}, labels
        runs = [json.loads(p.read_text()) for p in deployed.results.glob("runs/*/metrics.json")]
        recorded_answer = recorded_metrics(recorded, "solar-farm")["prediction"]
        assert [(m["task_id"], m["status"], m["prediction"]) for m in runs] == [("solar-farm", "ok", recorded_answer)]
        assert runs[0]["workspaces_missing"] == {}
        # a new access key in .env and swarm-up again: swarm will not change a secret in use, so
        # the stack names each secret by its content and the service takes the new one
        deployed.env["GAIAMESH_ACCESS_KEY"] = ROTATED
        again = deployed.swarm_up("--no-run")
        assert again.returncode == 0, again.stdout + again.stderr
        assert answers(deployed.api, 120)
        codes = {key: httpx.get(f"{deployed.api}/api/runs", headers={"Authorization": f"Bearer {key}"}).status_code
                 for key in (ROTATED, KEY)}  # fmt: skip
        assert codes == {ROTATED: 200, KEY: 401}, codes
        down = deployed.swarm_down("--volumes")
        assert down.returncode == 0, down.stdout + down.stderr
        assert swarm_state(deployed) == "inactive"  # swarm-up made it, so swarm-down left it
        deadline = time.monotonic() + 60
        while deployed.docker("ps", "-aq").split():  # the stack's tasks and the registry container
            assert time.monotonic() < deadline, deployed.docker("ps", "-a")
            time.sleep(1)  # polling: the engine removes a left swarm's containers in its own time
    finally:
        take_down(deployed)
    assert as_it_was(before), (before, host_state())
