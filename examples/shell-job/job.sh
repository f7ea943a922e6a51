#!/usr/bin/env bash
# A shell job on the overlay, written with the `phoenix` command only: one coordinator and
# $WORKERS workers, each its own `phoenix node`. The coordinator reads tasks (numbers) from stdin,
# deals them round-robin to the workers by name with acknowledged sends; each worker takes its
# tasks with `phoenix recv`, squares them, and sends the results back to the coordinator by name.
#
#   seq 1 12 | WORKERS=3 bash examples/shell-job/job.sh
#
# `phoenix` must be on PATH: from the repository root, `npx -y pnpm@10 exec bash examples/shell-job/job.sh`
# (pnpm exec puts node_modules/.bin on PATH), or set PATH="$PWD/node_modules/.bin:$PATH".
set -euo pipefail

WORKERS=${WORKERS:-3}
command -v phoenix > /dev/null || { echo "job.sh: no phoenix command on PATH (see the comment at the top)" >&2; exit 1; }
dir=$(mktemp -d)
nodes=()

# Every node leaves on SIGTERM; their recv streams then end, and the pipelines behind them finish.
cleanup() {
  [ ${#nodes[@]} -gt 0 ] && kill -TERM "${nodes[@]}" 2> /dev/null || true
  wait || true
  rm -rf "$dir"
}
trap cleanup EXIT

# Waits until a node's log says its control endpoint is up.
wait_for_node() {
  for _ in $(seq 1 600); do
    grep -q '^control endpoint on' "$1" 2> /dev/null && return 0
    sleep 0.1
  done
  echo "job.sh: $1 never came up: $(cat "$1")" >&2
  return 1
}

# The coordinator is also the hub every worker knows.
phoenix node --name coord --control "$dir/coord.sock" > "$dir/coord.log" 2>&1 &
nodes+=($!)
wait_for_node "$dir/coord.log"
hub=$(sed -n 's/^phoenix node [^ ]* listening on \([^ ]*\).*/\1/p' "$dir/coord.log")

for ((w = 0; w < WORKERS; w++)); do
  phoenix node --name "worker-$w" --hub "$hub" --control "$dir/worker-$w.sock" > "$dir/worker-$w.log" 2>&1 &
  nodes+=($!)
done
for ((w = 0; w < WORKERS; w++)); do
  wait_for_node "$dir/worker-$w.log"
  # The worker: one task per message in, one result per line out, all results in one acknowledged stream.
  phoenix recv --control "$dir/worker-$w.sock" |
    while IFS= read -r n; do echo "worker-$w: $n squared is $((n * n))"; done |
    phoenix send --control "$dir/worker-$w.sock" --lines --ack --wait-ms 30000 coord > "$dir/worker-$w.acks" &
done

# The coordinator: tasks from stdin, dealt round-robin, each send waiting for its acknowledgement.
mapfile -t tasks
for ((w = 0; w < WORKERS; w++)); do
  for ((t = w; t < ${#tasks[@]}; t += WORKERS)); do printf '%s\n' "${tasks[t]}"; done |
    phoenix send --control "$dir/coord.sock" --lines --ack --wait-ms 30000 "worker-$w" > "$dir/coord-$w.acks" &
  senders+=($!)
done
wait "${senders[@]}"
acked=$(cat "$dir"/coord-*.acks | grep -c '^acknowledged by worker-' || true)

# Every result comes back to the coordinator's name.
results=$(phoenix recv --control "$dir/coord.sock" --count "${#tasks[@]}")
echo "$results" | sort -t: -k1,1 -s
sum=0
expected=0
for n in "${tasks[@]}"; do expected=$((expected + n * n)); done
while IFS= read -r line; do sum=$((sum + ${line##* })); done <<< "$results"
echo "tasks ${#tasks[@]}, acknowledged $acked, results $(wc -l <<< "$results"), sum of squares $sum (expected $expected)"
[ "$acked" -eq "${#tasks[@]}" ] && [ "$sum" -eq "$expected" ]
