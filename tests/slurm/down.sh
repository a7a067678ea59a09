#!/usr/bin/env bash
# Stop exactly the processes tests/slurm/up.sh started (the PIDs it recorded), and nothing else.
set -uo pipefail
STATE=${REPROBENCH_SLURM_STATE:-/tmp/reprobench-slurm}
[ -s "$STATE/pids" ] || { echo "down.sh: nothing recorded in $STATE/pids"; exit 0; }
pids=$(cat "$STATE/pids")
kill $pids 2>/dev/null
for _ in $(seq 20); do
  alive=$(for p in $pids; do kill -0 "$p" 2>/dev/null && echo "$p"; done)
  [ -z "$alive" ] && break
  sleep 0.5
done
[ -n "${alive:-}" ] && kill -9 $alive 2>/dev/null
: > "$STATE/pids"
echo "down.sh: stopped $pids"
