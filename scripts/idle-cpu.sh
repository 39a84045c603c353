#!/usr/bin/env bash
# The console's CPU use while it sits open: the release binary in a tmux pane against the
# emulator, CPU time read from /proc/<pid>/stat over a measured window after a warm-up.
# Two worlds: the demo world frozen (--speed 0: nothing changes but the age shown) and the
# demo world at its default speed (data changing every refresh).
#
#   scripts/idle-cpu.sh [SECONDS]        (default 60; needs tmux)
set -euo pipefail
cd "$(dirname "$0")/.."
window=${1:-60}
cargo build --release --quiet
bin=target/release/quotatop
tick=$(getconf CLK_TCK)
port=5577
export AWS_ACCESS_KEY_ID=AKIDIDLE AWS_SECRET_ACCESS_KEY=idle AWS_REGION=us-east-1
export AWS_EC2_METADATA_DISABLED=true

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

measure() {
  local label=$1 speed=$2
  "$bin" emulator --port "$port" --speed "$speed" >/dev/null 2>&1 &
  local emu=$!
  sleep 1
  tmux new-session -d -s qt-idle -x 120 -y 40 \
    "$bin tui --queue ml-training --endpoint-url http://127.0.0.1:$port --no-journal"
  sleep 10
  local pid
  pid=$(tmux display-message -p -t qt-idle '#{pane_pid}')
  if [ "$(cat "/proc/$pid/comm")" != quotatop ]; then
    echo "the pane runs $(cat "/proc/$pid/comm"), not quotatop" >&2
    exit 1
  fi
  local a b
  a=$(cpu_ticks "$pid")
  sleep "$window"
  b=$(cpu_ticks "$pid")
  tmux kill-session -t qt-idle
  kill "$emu"
  wait "$emu" 2>/dev/null || true
  awk -v l="$label" -v d=$((b - a)) -v t="$tick" -v w="$window" \
    'BEGIN { printf "%s: %.2f s CPU in %d s = %.2f%% of one core\n", l, d / t, w, 100 * d / t / w }'
}

measure "frozen world (nothing changes)" 0
measure "demo world at 60x (data changes every refresh)" 60
