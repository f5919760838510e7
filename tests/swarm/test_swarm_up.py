"""`gaiamesh swarm-up` as `make swarm-up` runs it, on engines with no swarm: it makes one (and
says so), labels its node for both roles and runs the bundled task through the API; deployed
again with a new access key, the service takes the new one. (That swarm-down leaves the swarm
swarm-up made is checked when the package's cluster goes: tests/swarm/conftest.py.)"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from ..conftest import recorded_metrics
from .conftest import KEY, ROTATED, FirstDeploy, Swarm

pytestmark = pytest.mark.swarm


def test_swarm_up_makes_a_swarm_where_none_is_and_runs_the_task(first_deploy: FirstDeploy, recorded: Path) -> None:
    said = first_deploy.up.stdout + first_deploy.up.stderr
    assert (first_deploy.state_before, first_deploy.state_after) == ("inactive", "active"), said
    assert "none was active; initialised swarm" in said, said
    # one node holds both roles: swarm-up labelled it for the network service and the agents
    assert first_deploy.labels == {"gaiamesh.network": "true", "gaiamesh.agents": "true"}, first_deploy.labels
    recorded_answer = recorded_metrics(recorded, "solar-farm")["prediction"]
    runs = first_deploy.runs
    assert [(m["task_id"], m["status"], m["prediction"]) for m in runs] == [("solar-farm", "ok", recorded_answer)]
    assert runs[0]["workspaces_missing"] == {}


def test_a_new_access_key_deployed_again_replaces_the_old(swarm: Swarm) -> None:
    # swarm will not change a secret in use, so the stack names each secret by its content and
    # the service takes the new one
    codes = {key: httpx.get(f"{swarm.api}/api/runs", headers={"Authorization": f"Bearer {key}"}).status_code
             for key in (ROTATED, KEY)}  # fmt: skip
    assert codes == {ROTATED: 200, KEY: 401}, codes
