#!/usr/bin/env bash
# make bench-attacks: the task's model answers recorded once (live, json), then every attack under
# every protocol on those answers (the model held fixed, so only the wire differs).
# TASK (default tasks/solar-farm), PROTOCOLS, ATTACKS, OUT (default bench/attacks), TRANSPORTS
# (relay,native), SECURITY (none,tls,mtls: WIRE_TLS on the relay's wire);
# REPLAY=FROM reuses an earlier recording; LIVE=1 asks the model in every run instead.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-bench/attacks}
task=${TASK:-tasks/solar-farm}
args=(--task "$task" --out "$out")
[ -n "${PROTOCOLS:-}" ] && args+=(--protocols "$PROTOCOLS")
[ -n "${ATTACKS:-}" ] && args+=(--attacks "$ATTACKS")
[ -n "${TRANSPORTS:-}" ] && args+=(--transports "$TRANSPORTS")
[ -n "${SECURITY:-}" ] && args+=(--security "$SECURITY")
if [ -z "${LIVE:-}" ]; then
  if [ -z "${REPLAY:-}" ]; then
    mkdir -p "$out/recorded-task"
    ln -sfn "$(realpath "$task")" "$out/recorded-task/$(basename "$task")"
    .venv/bin/gaiamesh bench --tasks "$out/recorded-task" --protocols json --repeat 1 --out "$out/recorded"
    REPLAY="$out/recorded"
  fi
  args+=(--replay "$REPLAY")
fi
exec .venv/bin/gaiamesh bench-attacks "${args[@]}"
