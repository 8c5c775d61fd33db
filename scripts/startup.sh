#!/usr/bin/env bash
# Start-up time of `stsfair simulate` on throughputs tables of many job types (the table of
# docs/simulation.md, "Inputs"): the wall time of a run of one job, which is the time to load the
# table, train the predictor of its unmeasured pairs (if any) and run a handful of rounds.
# Tables from scripts/gen-throughputs.py: 7 families x 8 batch sizes = 56 job types on one GPU
# type (64 GPUs), with all, 90% and 50% of the single-GPU pairs measured; and the bundled Gavel
# table (26 job types, 3 GPU types, every pair measured).
#
# Usage: scripts/startup.sh [RUNS]   (default 3 runs per table; the median is printed)
# Needs a release build (`cargo build --release`) and python3. Set STSFAIR to use another binary.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${STSFAIR:-${CARGO_TARGET_DIR:-target}/release/stsfair}
RUNS=${1:-3}
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT

median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
seconds() {
  local start end
  start=$(date +%s.%N)
  "$@" > /dev/null
  end=$(date +%s.%N)
  printf "%.2f\n" "$(echo "$end - $start" | bc)"
}

echo "| table | job types | single-GPU pairs measured | seconds to finish a 1-job run (median of $RUNS) |"
echo "|---|---|---|---|"
for measured in 1.0 0.9 0.5; do
  file="$DIR/synthetic-$measured.json"
  python3 scripts/gen-throughputs.py --families 7 --batches 8 --gpu v100 --measured "$measured" > "$file"
  t=$(for _ in $(seq "$RUNS"); do seconds "$BIN" simulate --throughputs "$file" --cluster v100=64 --jobs 1 --json; done | median)
  echo "| synthetic (scripts/gen-throughputs.py) | 56 | $measured | $t |"
done
t=$(for _ in $(seq "$RUNS"); do seconds "$BIN" simulate --jobs 1 --json; done | median)
echo "| Gavel (bundled) | 26 | 1.0 | $t |"
