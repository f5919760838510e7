#!/usr/bin/env bash
# After `make up`: where the results, the API and the login URL are.
set -euo pipefail
val() { grep -E "^$1=" .env 2>/dev/null | tail -1 | cut -d= -f2-; }
port="${SERVICE_PORT:-$(val SERVICE_PORT)}"; port="${port:-8080}"
key="${GAIAMESH_ACCESS_KEY:-$(val GAIAMESH_ACCESS_KEY)}"
results="${RESULTS_DIR:-$(val RESULTS_DIR)}"; results="${results:-./results}"
cat <<EOT

results:   $results/metrics.json, $results/run_artifacts.tar.gz (every run: $results/runs/<run id>/)
API:       http://127.0.0.1:$port/openapi.json  (bearer token: GAIAMESH_ACCESS_KEY from .env)
login URL: http://127.0.0.1:$port/?key=$key  (open it: the live page, logged in)
The stack keeps running: \`gaiamesh submit\` (or POST /api/runs) starts more runs; \`make down\` stops it.
EOT
