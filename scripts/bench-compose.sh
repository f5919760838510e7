#!/usr/bin/env bash
# `make bench`: the protocol comparison on the compose stack, through the network service's API.
# The stack comes up once (agents speak every protocol; each run names its own), every task runs
# REPEAT times per protocol with `gaiamesh submit`, and `gaiamesh report` turns the metrics.json
# files into results.csv, summary.md and comparison.png.
set -euo pipefail
PROTOCOLS="${PROTOCOLS:-json,binary,compressed,signed,a2a}"
REPEAT="${REPEAT:-3}"
OUT="${OUT:-bench/compose}"
case "$OUT" in /*) ;; *) OUT="$PWD/$OUT" ;; esac  # compose reads a bare relative path as a volume name
export COMPOSE_PROJECT_NAME="${COMPOSE_PROJECT_NAME:-gaiamesh-bench}" RESULTS_DIR="$OUT"
export SERVICE_PORT="${BENCH_SERVICE_PORT:-8090}" HOST_PORT_PREFIX="${BENCH_HOST_PORT_PREFIX:-91}"
tasks=(tasks/*/)
total=$(( $(tr ',' '\n' <<<"$PROTOCOLS" | wc -l) * REPEAT * ${#tasks[@]} ))
n=0
rm -rf "$OUT/bench-runs"
mkdir -p "$OUT"
trap 'docker compose down --remove-orphans --timeout 5 >/dev/null 2>&1' EXIT
echo "== starting the stack (project $COMPOSE_PROJECT_NAME, API on 127.0.0.1:$SERVICE_PORT) =="
docker compose up -d --wait >/dev/null
for protocol in ${PROTOCOLS//,/ }; do
  for r in $(seq 1 "$REPEAT"); do
    for t in "${tasks[@]}"; do
      id="$(basename "$t")"; n=$((n + 1))
      dir="bench-runs/$protocol/$id-$r"; mkdir -p "$OUT/$dir"
      if docker compose exec -T network gaiamesh submit --url http://127.0.0.1:8080 --task "$id" \
          --protocol "$protocol" --out "/results/$dir" >"$OUT/$dir/run.log" 2>&1; then s=ok; else s=FAILED; fi
      printf '[%3d/%d] %-10s %-24s #%d %s\n' "$n" "$total" "$protocol" "$id" "$r" "$s"
    done
  done
done
.venv/bin/gaiamesh report "$OUT/bench-runs" --out "$OUT"
