#!/bin/bash
# usage: run1000.sh STORE LABEL [LIMIT] -> /tmp/acpwork/LABEL; one line appended to /tmp/acpwork/runs.txt:
# load before/after, total CPU of the command's process tree (/usr/bin/time), coordinator CPU (last /proc read), streams.csv row
cd /work/wt-acp
L=${3:-1000}; O=/tmp/acpwork/$2; rm -rf $O
before=$(cut -d' ' -f1-3 /proc/loadavg); t0=$(date -u +%H:%M:%S)
PYTHONPATH=/work/wt-acp/src ACP_STORE=$1 /usr/bin/time -o /tmp/acpwork/$2.time -f "%e %U %S" timeout 900 /work/main/.venv/bin/gaiamesh stream --tasks tasks-stream/protocolbench-top1000.jsonl --limit $L --workers 64 --protocols acp --transport native --replay /tmp/acp-record --pace none --out $O > /tmp/acpwork/$2.log 2>&1 &
tp=$!
for i in $(seq 1 120); do grep -qs listening $O/logs/agent-0.log && break; sleep 0.5; done
port=$(grep -o "127.0.0.1:[0-9]*" $O/logs/agent-0.log | head -1 | cut -d: -f2); nport=$((port+1000))
pid=""; for i in $(seq 1 60); do pid=$(ss -ltnp | grep ":$nport " | grep -o "pid=[0-9]*" | head -1 | cut -d= -f2); [ -n "$pid" ] && break; sleep 0.5; done
tck=$(getconf CLK_TCK); coord=0
while kill -0 $tp 2>/dev/null; do
  s=$(cut -d' ' -f14,15 /proc/$pid/stat 2>/dev/null) && [ -n "$s" ] && coord=$(echo $s | awk -v t=$tck '{printf "%.2f", ($1+$2)/t}')
  sleep 0.5
done
wait $tp; rc=$?
after=$(cut -d' ' -f1-3 /proc/loadavg)
row=$(tail -1 $O/streams.csv)
echo "$2 store=$1 start=$t0 rc=$rc load_before=[$before] load_after=[$after] wall_user_sys=[$(cat /tmp/acpwork/$2.time | tail -1)] coordinator_cpu_s=$coord $row" >> /tmp/acpwork/runs.txt
