#!/usr/bin/env bash
# `make bench`: the protocol comparison on the compose stack, through the network service's API.
# This script brings a stack of its own up and down; `gaiamesh bench-compose` (on the host's .venv)
# runs the tasks: one warm-up run that is not counted, then every protocol of a task back to back
# in an order shuffled with SEED, each run with the machine's load beside it; then results.csv,
# summary.md and comparison.png in OUT.
#   make bench           record + replay (the default): each task once under json on the live model
#                        (OUT/records/), then the agents replay those records (LLM_BACKEND=replay)
#                        under every protocol: only the wire differs; minutes, not an hour
#   LIVE=1 make bench    the model live under every protocol (about 15 s a run on a quiet 2-core machine)
#   make bench FULL=1    every task, REPEAT=3
#   PROTOCOLS=json,a2a LIMIT=1 REPEAT=2 SEED=3 OUT=bench/mine make bench     any narrower or wider one
# Its own ports (apart from make up's stack): BENCH_SERVICE_PORT (8090), BENCH_HOST_PORT_PREFIX (91).
set -euo pipefail
PROTOCOLS="${PROTOCOLS:-json,binary,compressed,signed,a2a,anp,acp,agora}"
if [ -n "${FULL:-}" ] && [ "${FULL}" != 0 ]; then REPEAT="${REPEAT:-3}" LIMIT="${LIMIT:-0}"
else REPEAT="${REPEAT:-1}" LIMIT="${LIMIT:-0}"; fi
SEED="${SEED:-0}"
LIVE="${LIVE:-0}"
OUT="${OUT:-bench/compose}"
case "$OUT" in /*) ;; *) OUT="$PWD/$OUT" ;; esac  # compose reads a bare relative path as a volume name
export COMPOSE_PROJECT_NAME="${COMPOSE_PROJECT_NAME:-gaiamesh-bench}" RESULTS_DIR="$OUT"
export SERVICE_PORT="${BENCH_SERVICE_PORT:-8090}" HOST_PORT_PREFIX="${BENCH_HOST_PORT_PREFIX:-91}"
# Estimates for the cost said up front: seconds a run on a quiet 2-core machine (a live run took 11 s, a
# replayed one under 1 s; beside other load a live run took 2 min): docs/results/2026-11-27-make-bench-replay.md.
LIVE_RUN_S=15 REPLAY_RUN_S=1
tasks=(tasks/*/)
if [ "$LIMIT" -gt 0 ]; then tasks=("${tasks[@]:0:$LIMIT}"); fi
runs=$(( $(tr ',' '\n' <<<"$PROTOCOLS" | wc -l) * REPEAT * ${#tasks[@]} ))
bench=(.venv/bin/gaiamesh bench-compose --url "http://127.0.0.1:$SERVICE_PORT" --project "$COMPOSE_PROJECT_NAME"
       --protocols "$PROTOCOLS" --repeat "$REPEAT" --limit "$LIMIT" --seed "$SEED" --out "$OUT")
# the access key as compose gives it to the service: the environment's, else .env's
export GAIAMESH_ENV_FILE=.env
minutes() { echo $(( ($1 + 59) / 60 )); }
if [ "$LIVE" != 0 ]; then
  echo "LIVE=1: $runs live runs + 1 warm-up, at about ${LIVE_RUN_S} s a run on a quiet 2-core machine: about $(minutes $(( (runs + 1) * LIVE_RUN_S ))) min (more beside other load)"
else
  echo "record + replay: ${#tasks[@]} live records (about ${LIVE_RUN_S} s each), then $runs replayed runs + 1 warm-up" \
       "(about ${REPLAY_RUN_S} s each): about $(minutes $(( ${#tasks[@]} * LIVE_RUN_S + (runs + 1) * REPLAY_RUN_S ))) min" \
       "(LIVE=1: about $(minutes $(( (runs + 1) * LIVE_RUN_S ))) min)"
fi
scripts/check-ports.py --bench
rm -rf "$OUT/bench-runs" "$OUT/records" "$OUT/warm-up"
mkdir -p "$OUT/bench-runs"
scripts/owner.sh "$OUT"  # the network service writes here as GAIAMESH_USER, whoever runs make
trap 'docker compose down --remove-orphans --timeout 5 >/dev/null 2>&1' EXIT
if [ "$LIVE" != 0 ]; then
  echo "== [$(date -u +%T)] starting the stack (project $COMPOSE_PROJECT_NAME, API on 127.0.0.1:$SERVICE_PORT) =="
  scripts/stack-up.sh >/dev/null
  echo "== [$(date -u +%T)] $runs live runs: protocols $PROTOCOLS x ${#tasks[@]} tasks x $REPEAT, seed $SEED =="
  "${bench[@]}"
  exit
fi
echo "== [$(date -u +%T)] starting the stack on the live model (project $COMPOSE_PROJECT_NAME, API on 127.0.0.1:$SERVICE_PORT) =="
LLM_BACKEND="${LLM_BACKEND:-ollama}" scripts/stack-up.sh >/dev/null
echo "== [$(date -u +%T)] recording: ${#tasks[@]} tasks once under json, into $OUT/records =="
"${bench[@]}" --record-only
echo "== [$(date -u +%T)] the agents replay $OUT/records (LLM_BACKEND=replay) =="
LLM_BACKEND=replay REPLAY_FROM="$OUT/records" scripts/stack-up.sh >/dev/null
echo "== [$(date -u +%T)] $runs replayed runs: protocols $PROTOCOLS x ${#tasks[@]} tasks x $REPEAT, seed $SEED =="
"${bench[@]}" --replayed-from "$OUT/records"
