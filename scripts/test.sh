#!/usr/bin/env bash
# `make test`: every suite, in two streams at once. The suites that wait on Docker engines
# (tests/integration, tests/swarm: image builds, containers starting, docker save | load into
# the swarm's nodes) run beside the ones that keep the CPU busy (unit, api, browser, e2e,
# model), so that CI's test phase is about the longer stream rather than their sum. Both must
# pass; the Docker stream's output is printed whole after the other's.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.venv/bin}
mkdir -p build
log=build/test-docker.log
t0=$SECONDS
(
  "$BIN/pytest" -ra --durations=10 -p no:cacheprovider tests/integration tests/swarm > "$log" 2>&1
  echo $? > "$log.rc"
  echo "== Docker stream took $(( (SECONDS - t0) / 60 )) min $(( (SECONDS - t0) % 60 )) s ==" >> "$log"
) &
docker_stream=$!
trap 'pkill -P $docker_stream 2>/dev/null' INT TERM
"$BIN/pytest" -ra --durations=15 tests/unit tests/api tests/browser tests/e2e tests/model
local_rc=$?
echo "== local stream took $(( (SECONDS - t0) / 60 )) min $(( (SECONDS - t0) % 60 )) s; waiting for the Docker stream =="
wait "$docker_stream"
docker_rc=$(cat "$log.rc" 2>/dev/null || echo 1)
echo "== Docker stream (tests/integration tests/swarm), beside the other: $log =="
cat "$log"
echo "== make test: local stream exit $local_rc, Docker stream exit $docker_rc, $(( (SECONDS - t0) / 60 )) min $(( (SECONDS - t0) % 60 )) s =="
[ "$local_rc" -eq 0 ] && [ "$docker_rc" -eq 0 ]
