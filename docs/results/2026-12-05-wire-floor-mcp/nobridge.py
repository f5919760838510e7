"""An experiment: ``gaiamesh bench-wire --protocols mcp`` (its defaults) with ours' SDK on httpx2's
own transport in place of the bridge to the relay's httpx client (``interleaved.py``'s
``Httpx2Transport``), to see what the bridge is worth in the bench's blocks.

    PYTHONPATH=src python docs/results/2026-12-05-wire-floor-mcp/nobridge.py OUT
"""

import runpy
import sys
from pathlib import Path

import gaiamesh.mesh.protocols.mcp.client as mc
from gaiamesh.bench.wire.run import run_wire

if __name__ == "__main__":
    here = Path(__file__).parent
    mc.ThroughHttpx = runpy.run_path(str(here / "interleaved.py"), run_name="lib")["Httpx2Transport"]
    run_wire(Path(sys.argv[1]), ["mcp"], [1, 64], 20, 3)
