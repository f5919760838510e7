#!/usr/bin/env bash
# `docker compose [ARGS] up -d --wait`, and when the stack does not become healthy, say why
# before anything is torn down: every container that is not running and healthy, with its last
# log lines (a raw "container ... is unhealthy" hides the cause).
#   scripts/stack-up.sh [compose options, e.g. --profile wide]
set -uo pipefail
docker compose "$@" up -d --wait && exit 0
status=$?
{
  echo
  echo "== the stack did not become healthy (docker compose up exited $status); what failed, and why =="
  docker compose "$@" ps -a
  docker compose "$@" ps -a --format '{{.Service}} {{.State}} {{.Health}}' |
    awk '$2 != "running" || ($3 != "" && $3 != "healthy") {print $1}' |
    while read -r service; do
      echo "-- $service: its last log lines --"
      docker compose "$@" logs --no-color --no-log-prefix --tail "${LOG_LINES:-25}" "$service"
    done
} >&2
exit "$status"
