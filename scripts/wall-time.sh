#!/usr/bin/env bash
# Wall time of sts and gavel-mmf-ss side by side (docs/results.md, "What sts costs in time"): one
# `stsfair simulate --policy sts,gavel-mmf-ss` process per seed, so both policies of a seed run in
# the same process one after the other, two processes at a time.
#   saturation  --jobs 10000 --rate 5.6 --window 4000-4999, seeds 0 1 (SATURATION_SEEDS)
#   overload    --jobs 3000 --rate 8 --window 2000-2999, seeds 0-5 (OVERLOAD_SEEDS)
# Prints per workload and seed each policy's seconds and solver seconds a round.
#
# Usage: scripts/wall-time.sh   (about 10 minutes on two cores)
# Needs a release build (`cargo build --release`) and jq. Set STSFAIR to use another binary.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${STSFAIR:-${CARGO_TARGET_DIR:-target}/release/stsfair}
SATURATION_SEEDS=${SATURATION_SEEDS:-0 1}
OVERLOAD_SEEDS=${OVERLOAD_SEEDS:-0 1 2 3 4 5}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

run_one() {
  local row=$1 seed=$2 args
  args=$(workload_args "$row")
  # shellcheck disable=SC2086
  "$BIN" simulate $args --seed "$seed" --policy sts,gavel-mmf-ss --json 2>/dev/null \
    | jq -c --arg row "$row" --argjson seed "$seed" '{row: $row, seed: $seed, policy, seconds, solver_seconds_per_round}' \
    > "$OUT/$row-$seed.jsonl"
}
source scripts/workloads.sh
export -f run_one workload_args
export BIN OUT

{
  for s in $SATURATION_SEEDS; do echo "saturation $s"; done
  for s in $OVERLOAD_SEEDS; do echo "overload $s"; done
} | xargs -P 2 -L 1 bash -c 'run_one "$@"' _

echo "| workload | seed | sts s | gavel-mmf-ss s | sts / gavel-mmf-ss | solver ms a round: sts / gavel-mmf-ss |"
echo "|---|---|---|---|---|---|"
cat "$OUT"/*.jsonl | jq -rs '
  def r1: . * 10 | round / 10;
  def r2: . * 100 | round / 100;
  group_by([.row, .seed]) | sort_by(.[0].row == "overload", .[0].seed)[]
  | (map(select(.policy == "sts")) | first) as $s | (map(select(.policy == "gavel-mmf-ss")) | first) as $g
  | "| \($s.row) | \($s.seed) | \($s.seconds | r1) | \($g.seconds | r1) | \($s.seconds / $g.seconds | r2)x | \($s.solver_seconds_per_round * 1000 | r1) / \($g.solver_seconds_per_round * 1000 | r1) |"'
