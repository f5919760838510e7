# The replayed matrix of issue 61's check, with the code of the checkout at $1, into $2.
# Every protocol x both transports x both strategies x the ten bundled tasks, once each (340 runs;
# anp and agora carry no orchestrated run on their own wire), every model call answered from the
# live recording in $REC (made once: see 2026-12-05-house-third-pass.md).
set -e
SRC=$1; OUT=$2; REC=${REC:-rec}
cd "$SRC"
run() { PYTHONPATH=$SRC/src python -m gaiamesh bench --tasks tasks --repeat 1 --no-warm-up --replay "$REC" "$@"; }
ALL=json,binary,compressed,signed,a2a,anp,acp,agora,mcp
run --protocols $ALL --transports relay,native --strategies pipeline --out "$OUT/pipeline" --workspaces "$OUT/ws1"
run --protocols $ALL --transports relay --strategies orchestrated --out "$OUT/orchestrated" --workspaces "$OUT/ws2"
run --protocols json,binary,compressed,signed,a2a,acp,mcp --transports native --strategies orchestrated \
    --out "$OUT/orchestrated-native" --workspaces "$OUT/ws3"
