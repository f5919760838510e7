"""Every container's entry point imports the CLI; the model server's image holds only the model
server's requirements (requirements/model.txt), none of the wire's. So importing the CLI must not
pull in a package that only the wire needs."""

from __future__ import annotations

import subprocess
import sys

from ...conftest import ROOT

# The wire's packages the model server's image lacks (requirements/mesh.txt, not model.txt).
WIRE_ONLY = ("a2a", "a2wsgi", "agora", "anp", "cryptography", "mcp", "mcp_types", "msgpack", "websockets")

BLOCK = f"""
import sys
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {WIRE_ONLY!r}:
            raise ImportError(f"{{name}} is not in the model server's image")
        return None
sys.meta_path.insert(0, Refuse())
from gaiamesh.cli import main
raise SystemExit(main(["serve-model", "--help"]))
"""


def test_the_cli_starts_without_the_wires_packages() -> None:
    done = subprocess.run([sys.executable, "-c", BLOCK], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "serve-model" in done.stdout
