#!/usr/bin/env bash
# `make bench`: the protocol comparison on the compose stack. For each protocol the agents are
# (re)started with it, then every task runs REPEAT times through `docker compose run network`;
# `gaiamesh report` turns the metrics.json files into results.csv, summary.md, comparison.png.
set -euo pipefail
PROTOCOLS="${PROTOCOLS:-json,binary,compressed,signed,a2a}"
REPEAT="${REPEAT:-3}"
OUT="${OUT:-bench/compose}"
case "$OUT" in /*) ;; *) OUT="$PWD/$OUT" ;; esac  # compose reads a bare relative path as a volume name
export COMPOSE_PROJECT_NAME="${COMPOSE_PROJECT_NAME:-gaiamesh-bench}"
tasks=(tasks/*/)
total=$(( $(tr ',' '\n' <<<"$PROTOCOLS" | wc -l) * REPEAT * ${#tasks[@]} ))
n=0
rm -rf "$OUT/runs"
trap 'docker compose down --remove-orphans --timeout 5 >/dev/null 2>&1' EXIT
for protocol in ${PROTOCOLS//,/ }; do
  echo "== $protocol: starting agents =="
  PROTOCOL="$protocol" docker compose up -d --wait --quiet-pull ollama agent-search agent-extract agent-triple agent-reason >/dev/null
  for r in $(seq 1 "$REPEAT"); do
    for t in "${tasks[@]}"; do
      id="$(basename "$t")"; n=$((n + 1))
      dir="$OUT/runs/$protocol/$id-$r"; mkdir -p "$dir"
      if PROTOCOL="$protocol" TASK="./tasks/$id" RESULTS_DIR="$dir" docker compose run --rm network >"$dir/run.log" 2>&1; then s=ok; else s=FAILED; fi
      printf '[%3d/%d] %-10s %-24s #%d %s\n' "$n" "$total" "$protocol" "$id" "$r" "$s"
    done
  done
done
.venv/bin/gaiamesh report "$OUT/runs" --out "$OUT"
