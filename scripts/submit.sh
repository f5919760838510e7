#!/usr/bin/env bash
# make submit: one more run on the stack `make up` left running, from this machine's files.
# `gaiamesh submit` runs inside the network container, which sees none of the host's files, so a
# host folder goes to it packed as a tar and a host file as text, on standard input:
#   make submit TASK=path/to/folder               a task folder (doc.txt + ground_truth.json)
#   make submit DOC=file.txt QUESTION="..."       a text file and a question (ANSWER=... scores it)
#   make submit TASK=glass-museum                 a bundled task, by name
# PROTOCOL, TRANSPORT (relay | native), STRATEGY, ROUTING and NAME (the run's name) are passed on when set. The run's
# metrics.json and archive land in RESULTS_DIR/NAME (./results/<name> by default).
set -euo pipefail
val() { grep -E "^$1=" .env 2>/dev/null | tail -1 | cut -d= -f2- || true; }
die() { echo "make submit: $*" >&2; exit 2; }
results="${RESULTS_DIR:-$(val RESULTS_DIR)}"; results="${results:-./results}"

opts=() rc=0
for flag in question answer protocol transport strategy routing; do
  var="${flag^^}"
  if [ -n "${!var:-}" ]; then opts+=("--$flag" "${!var}"); fi
done
clean() {  # a run name from a host path: its last part, without a file's extension
  local base; base="$(basename "$1")"; [ -d "$1" ] || base="${base%.*}"
  base="$(printf %s "$base" | tr -c 'A-Za-z0-9_.-' '-')"; echo "${base:-document}"
}
submit() {
  docker compose exec -T network gaiamesh submit --url http://127.0.0.1:8080 "$@" "${opts[@]}" --out "/results/$name"
}

if [ -n "${DOC:-}" ]; then
  [ -f "$DOC" ] || die "DOC=$DOC: no such file on this machine"
  [ -n "${QUESTION:-}" ] || die "DOC=$DOC needs QUESTION=\"...\" (the question to ask about it)"
  name="${NAME:-$(clean "$DOC")}"
  submit --document - --name "$name" <"$DOC" || rc=$?
elif [ -n "${TASK:-}" ] && [ -d "$TASK" ]; then
  name="${NAME:-$(clean "$(cd "$TASK" && pwd)")}"
  # -h: a link in the folder is sent as the file it points to (the container refuses links)
  tar -h -C "$TASK" -c . | submit --task - --name "$name" || rc=$?
elif [ -n "${TASK:-}" ] && [[ "$TASK" != */* && "$TASK" != .* ]]; then
  name="${NAME:-$TASK}"
  submit --task "$TASK" ${NAME:+--name "$NAME"} </dev/null || rc=$?
else
  die "${TASK:+TASK=$TASK: no such folder on this machine; }give TASK=path/to/folder, TASK=bundled-name or DOC=file.txt QUESTION=\"...\""
fi
[ -f "$results/$name/metrics.json" ] && echo "on this machine: $results/$name/metrics.json and run_artifacts.tar.gz"
exit "${rc:-0}"
