"""Network container entry point: the long-lived network service (`gaiamesh serve`) by default;
any other gaiamesh command when given (`docker compose run --rm network relay` runs TASK once)."""

import sys

from gaiamesh.cli import main

raise SystemExit(main(sys.argv[1:] or ["serve"]))
