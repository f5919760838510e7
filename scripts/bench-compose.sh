#!/usr/bin/env bash
# `make bench`: the protocol comparison on the compose stack, through the network service's API.
# The stack comes up once (agents speak every protocol; each run names its own), each task runs
# REPEAT times per protocol with `gaiamesh submit`, and `gaiamesh report` turns the metrics.json
# files into results.csv, summary.md and comparison.png.
#   make bench                     the quick matrix: every protocol, every task, once (~18 min here)
#   make bench FULL=1              the full matrix: every task, REPEAT=3
#   PROTOCOLS=json,a2a LIMIT=1 REPEAT=2 OUT=bench/mine make bench     any narrower or wider one
# Its own ports (apart from make up's stack): BENCH_SERVICE_PORT (8090), BENCH_HOST_PORT_PREFIX (91).
set -euo pipefail
PROTOCOLS="${PROTOCOLS:-json,binary,compressed,signed,a2a,anp,acp,agora}"
if [ -n "${FULL:-}" ] && [ "${FULL}" != 0 ]; then REPEAT="${REPEAT:-3}" LIMIT="${LIMIT:-0}"
else REPEAT="${REPEAT:-1}" LIMIT="${LIMIT:-0}"; fi
OUT="${OUT:-bench/compose}"
case "$OUT" in /*) ;; *) OUT="$PWD/$OUT" ;; esac  # compose reads a bare relative path as a volume name
export COMPOSE_PROJECT_NAME="${COMPOSE_PROJECT_NAME:-gaiamesh-bench}" RESULTS_DIR="$OUT"
export SERVICE_PORT="${BENCH_SERVICE_PORT:-8090}" HOST_PORT_PREFIX="${BENCH_HOST_PORT_PREFIX:-91}"
tasks=(tasks/*/)
if [ "$LIMIT" -gt 0 ]; then tasks=("${tasks[@]:0:$LIMIT}"); fi
total=$(( $(tr ',' '\n' <<<"$PROTOCOLS" | wc -l) * REPEAT * ${#tasks[@]} ))
scripts/check-ports.py --bench
rm -rf "$OUT/bench-runs"
mkdir -p "$OUT/bench-runs"
scripts/owner.sh "$OUT"  # the network service writes here as GAIAMESH_USER, whoever runs make
trap 'docker compose down --remove-orphans --timeout 5 >/dev/null 2>&1' EXIT
echo "== [$(date -u +%T)] starting the stack (project $COMPOSE_PROJECT_NAME, API on 127.0.0.1:$SERVICE_PORT) =="
scripts/stack-up.sh >/dev/null
echo "== [$(date -u +%T)] $total runs: protocols $PROTOCOLS x ${#tasks[@]} tasks x $REPEAT (FULL=1: 3 times) =="
n=0 failed=0 start=$SECONDS
for protocol in ${PROTOCOLS//,/ }; do
  for r in $(seq 1 "$REPEAT"); do
    for t in "${tasks[@]}"; do
      id="$(basename "$t")"; n=$((n + 1))
      dir="bench-runs/$protocol/$id-$r"; mkdir -p "$OUT/$dir"; scripts/owner.sh "$OUT/$dir"
      if docker compose exec -T network gaiamesh submit --url http://127.0.0.1:8080 --task "$id" \
          --protocol "$protocol" --out "/results/$dir" >"$OUT/$dir/run.log" 2>&1; then s=ok
      else s="FAILED (see $OUT/$dir/run.log)"; failed=$((failed + 1)); fi
      spent=$((SECONDS - start)); left=$(( spent * (total - n) / n ))
      printf '[%3d/%d] %-10s %-24s #%d %s · %d:%02d elapsed, about %d:%02d left\n' "$n" "$total" "$protocol" \
        "$id" "$r" "$s" $((spent / 60)) $((spent % 60)) $((left / 60)) $((left % 60))
    done
  done
done
.venv/bin/gaiamesh report "$OUT/bench-runs" --out "$OUT"
if [ "$failed" -gt 0 ]; then echo "$failed of $total runs failed (their run.log says why)" >&2; exit 1; fi
