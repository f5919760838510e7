#!/usr/bin/env bash
# After `make up`: where the results, the API and the login URL are, and commands that work
# when pasted (the `gaiamesh` command lives in the network container, which sees none of the
# host's files: a host folder or file goes to it on standard input; on the host it is
# .venv/bin/gaiamesh after `make setup`).
set -euo pipefail
val() { grep -E "^$1=" .env 2>/dev/null | tail -1 | cut -d= -f2- || true; }
port="${SERVICE_PORT:-$(val SERVICE_PORT)}"; port="${port:-8080}"
key="${GAIAMESH_ACCESS_KEY:-$(val GAIAMESH_ACCESS_KEY)}"
results="${RESULTS_DIR:-$(val RESULTS_DIR)}"; results="${results:-./results}"
other="$(ls tasks | grep -v -x -e solar-farm -e README.md | head -1)"
question="$(python3 -c 'import json, shlex, sys; print(shlex.quote(json.load(open(sys.argv[1]))["question"]))' \
  "tasks/$other/ground_truth.json")"
cat <<EOT

results:   $results/metrics.json, $results/run_artifacts.tar.gz (every run: $results/runs/<run id>/)
API:       http://127.0.0.1:$port/openapi.json  (bearer token: GAIAMESH_ACCESS_KEY from .env)
login URL: http://127.0.0.1:$port/?key=$key  (open it: the live page, logged in)
The stack keeps running. More runs: a bundled task by name (/results/NAME in the container is $results/NAME here):
  docker compose exec -T network gaiamesh submit --task $other --protocol a2a --out /results/$other
A task folder or a text file of yours (paths of this machine, sent to the container on standard input):
  make submit TASK=tasks/$other PROTOCOL=a2a
  tar -C tasks/$other -c . | docker compose exec -T network gaiamesh submit --task - --name my-task --out /results/my-task
  docker compose exec -T network gaiamesh submit --document - --name my-document --question $question --out /results/my-document < tasks/$other/doc.txt
Stop everything:
  make down
EOT
